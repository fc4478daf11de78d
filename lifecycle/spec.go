package lifecycle

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// PortPlaceholder is replaced, in Command, URL and HealthURL, by a free loopback port chosen anew
// for every launch, never one that another process of the same Manager holds.
const PortPlaceholder = "{port}"

// Defaults for zero-valued fields.
const (
	DefaultLoadTimeout       = 2 * time.Minute
	DefaultStopGrace         = 10 * time.Second
	DefaultPollInterval      = 250 * time.Millisecond
	DefaultProbeTimeout      = 5 * time.Second
	DefaultRestartBackoff    = time.Second
	DefaultMaxRestartBackoff = time.Minute
)

// Spec is one lifecycle-managed target, as config will hold it.
type Spec struct {
	// Name is the target name ([targets.NAME]).
	Name string
	// Command is the argv to run; PortPlaceholder in any element is substituted. Required.
	Command []string
	// Env is added to the gateway's environment for the child ("KEY=value").
	Env []string
	// Withhold names variables of the gateway's environment the child does not get: config puts
	// the other targets' api_key_env here, so that a local model server never holds a key meant
	// for another upstream (a cloud tail's, say). Env still sets what it names.
	Withhold []string
	// URL is the base URL handed to the adapter (for openai it includes /v1); PortPlaceholder is
	// substituted. Required.
	URL string
	// HealthURL is the full URL whose 200 means healthy; PortPlaceholder is substituted. Required:
	// config fills it from the adapter's default health path.
	HealthURL string
	// IdleStop stops the process after this long without use; 0 = never. Not allowed on pinned
	// members.
	IdleStop time.Duration
	// Group names the GroupSpec whose slots this member shares; "" = no group (no slot limit, not
	// pre-warmed).
	Group string
	// LoadTimeout bounds a start, from launch to a passing health check, and how long a request
	// waits for the target; 0 = DefaultLoadTimeout.
	LoadTimeout time.Duration
}

// GroupSpec is a [groups.NAME] table.
type GroupSpec struct {
	// Name is the group name.
	Name string
	// Slots is how many members may run at once; pinned members occupy slots. At least 1.
	Slots int
	// Pinned members are started by Start, restarted whenever they fail and never evicted.
	Pinned []string
}

// Options are the manager-wide settings. The zero value is usable.
type Options struct {
	// Clock drives idle_stop, load_timeout, restart backoff and StopGrace; nil = WallClock.
	Clock Clock
	// StateFile is where the LRU order is kept (JSON, replaced atomically and durably); "" = not
	// kept. Start reads it, and removes the temporary copies a crash left; a Manager never
	// started never writes it.
	StateFile string
	// Logger receives starts, stops and crashes; nil = discarded.
	Logger *slog.Logger
	// StopGrace is the wait between SIGTERM and SIGKILL; 0 = DefaultStopGrace.
	StopGrace time.Duration
	// WaitHealthy makes Start wait until every pinned member is healthy.
	WaitHealthy bool
	// PollInterval is the pause between health probes of a starting process; 0 = DefaultPollInterval.
	PollInterval time.Duration
	// ProbeTimeout bounds one health probe; 0 = DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// RestartBackoff is the first delay before restarting a crashed process; 0 = DefaultRestartBackoff.
	RestartBackoff time.Duration
	// MaxRestartBackoff caps the growing restart delay; 0 = DefaultMaxRestartBackoff.
	MaxRestartBackoff time.Duration
	// Counts is where launches are counted by target name, beside each member's own Starts and
	// Restarts (which a changed member starts anew): hand every Manager a process builds the
	// same Counts so that a name's counts go on across reloads. nil = a Counts of the Manager's.
	Counts *Counts
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Counts == nil {
		o.Counts = new(Counts)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StopGrace, DefaultStopGrace)
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.ProbeTimeout, DefaultProbeTimeout)
	def(&o.RestartBackoff, DefaultRestartBackoff)
	def(&o.MaxRestartBackoff, DefaultMaxRestartBackoff)
	if o.MaxRestartBackoff < o.RestartBackoff {
		o.MaxRestartBackoff = o.RestartBackoff
	}
	return o
}

// validate checks specs and groups together; it returns every problem, joined.
func validate(specs []Spec, groups []GroupSpec) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("lifecycle: "+format, a...)) }

	byName := make(map[string]*Spec, len(specs))
	for i := range specs {
		s := &specs[i]
		switch {
		case s.Name == "":
			bad("spec %d has no name", i)
			continue
		case byName[s.Name] != nil:
			bad("target %s declared twice", s.Name)
			continue
		}
		byName[s.Name] = s
		if len(s.Command) == 0 || s.Command[0] == "" {
			bad("target %s: command is empty", s.Name)
		}
		if s.URL == "" {
			bad("target %s: url is empty", s.Name)
		}
		if s.HealthURL == "" {
			bad("target %s: health url is empty", s.Name)
		}
		if s.IdleStop < 0 || s.LoadTimeout < 0 {
			bad("target %s: negative duration", s.Name)
		}
		for _, e := range s.Env {
			if !strings.Contains(e, "=") {
				bad("target %s: env %q is not KEY=value", s.Name, e)
			}
		}
	}

	members := map[string][]string{}
	for _, s := range specs {
		if s.Group != "" {
			members[s.Group] = append(members[s.Group], s.Name)
		}
	}
	seen := map[string]bool{}
	for _, g := range groups {
		if seen[g.Name] {
			bad("group %s declared twice", g.Name)
			continue
		}
		seen[g.Name] = true
		if g.Slots < 1 {
			bad("group %s: slots must be at least 1", g.Name)
			continue
		}
		pinned := map[string]bool{}
		for _, p := range g.Pinned {
			s := byName[p]
			switch {
			case s == nil:
				bad("group %s: pinned %s is not a managed target", g.Name, p)
			case s.Group != g.Name:
				bad("group %s: pinned %s is not a member (its group is %q)", g.Name, p, s.Group)
			case pinned[p]:
				bad("group %s: %s pinned twice", g.Name, p)
			case s.IdleStop > 0:
				bad("group %s: pinned %s has idle_stop; pinned members are never stopped", g.Name, p)
			}
			pinned[p] = true
		}
		if len(pinned) > g.Slots {
			bad("group %s: %d pinned members do not fit in %d slots", g.Name, len(pinned), g.Slots)
		} else if len(pinned) == g.Slots && len(members[g.Name]) > len(pinned) {
			bad("group %s: every slot is pinned, so its other members could never start", g.Name)
		}
	}
	for _, s := range specs {
		if s.Group != "" && !seen[s.Group] {
			bad("target %s: group %s is not declared", s.Name, s.Group)
		}
	}
	return errors.Join(errs...)
}
