package core

// Class is what kind of failure an upstream attempt ended in.
type Class uint8

const (
	// ClassNone is no failure.
	ClassNone Class = iota
	// ClassConnection: the upstream could not be reached or dropped the connection.
	ClassConnection
	// ClassTimeout: no response headers within the target's timeout.
	ClassTimeout
	// ClassServerError: a 5xx answer.
	ClassServerError
	// ClassRateLimit: a 429 answer.
	ClassRateLimit
	// ClassOverflow: the request does not fit this target's context (413, context_length_exceeded).
	ClassOverflow
	// ClassEndpoint: 401/402/403/404/410, or an answer that does not meet a valid request
	// (UnmetError): a failure of that endpoint rather than of the request.
	ClassEndpoint
	// ClassRequest: any other 4xx, the client's fault; answered as-is.
	ClassRequest
	// ClassClientGone: the client went away; no penalty for the upstream.
	ClassClientGone
	// ClassLoading: the upstream is swapping a model in (503 with status "loading").
	ClassLoading
	numClasses
)

// NumClasses is how many classes there are (ClassNone included), for arrays indexed by Class.
const NumClasses = int(numClasses)

var classNames = [numClasses]string{"none", "connection", "timeout", "server_error", "rate_limit",
	"overflow", "endpoint", "request", "client_gone", "loading"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "unknown"
}

// ParseClass turns a config string into a Class.
func ParseClass(s string) (Class, bool) {
	for i, n := range classNames {
		if n == s && i != 0 {
			return Class(i), true
		}
	}
	return 0, false
}

// ClassSet is a set of classes.
type ClassSet uint16

// DefaultFallbackOn is every class that moves a chain on by default.
const DefaultFallbackOn = ClassSet(1<<ClassConnection | 1<<ClassTimeout | 1<<ClassServerError |
	1<<ClassRateLimit | 1<<ClassOverflow | 1<<ClassEndpoint | 1<<ClassLoading)

// SetOf builds a set.
func SetOf(cs ...Class) ClassSet {
	var s ClassSet
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s ClassSet) Has(c Class) bool { return s&(1<<c) != 0 }

// Classes lists the members in order.
func (s ClassSet) Classes() []Class {
	var out []Class
	for c := Class(1); c < numClasses; c++ {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}
