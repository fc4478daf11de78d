package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunkReads reads r to its first error in reads of size bytes, and says what the reads
// returned (their data, joined, and the error that ended them) and what was left in br after.
// The reads are joined, not compared one by one: chunkedReader returns data in hand where
// net/http's decoder would read on for the rest of its chunk.
func chunkReads(r io.Reader, br *bufio.Reader, size int) []string {
	var data []byte
	var end error
	p := make([]byte, size)
	for range 1 << 16 {
		n, err := r.Read(p)
		data = append(data, p[:n]...)
		if err != nil {
			end = err
			break
		}
	}
	rest, _ := io.ReadAll(br)
	return []string{fmt.Sprintf("%q", data), fmt.Sprintf("%v", end), fmt.Sprintf("left %q", rest)}
}

func TestChunkedReader(t *testing.T) {
	tests := []struct{ name, raw, wantErr string }{
		{"plain", "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nNEXT", ""},
		{"extension", "3;x=y\r\nabc\r\n0\r\n\r\n", ""},
		{"size with blanks", "3 \t\r\nabc\r\n0\r\n\r\n", ""},
		{"bare LF", "3\nabc\r\n0\r\n\r\n", ""},
		{"CR inside the line", "3\r;\r\nabc\r\n0\r\n\r\n", ""},
		{"no CRLF after the data", "3\r\nabcX\r\n0\r\n\r\n", ""},
		{"cut in the data", "5\r\nab", ""},
		{"cut in the size line", "5", ""},
		{"bad size", "zz\r\nab\r\n", ""},
		{"empty size", "\r\nab\r\n", ""},
		{"size too large", "11111111111111111\r\nab\r\n", ""},
		{"extensions larger than the data", strings.Repeat("1;"+strings.Repeat("x", 200)+"\r\nx\r\n", 100) + "0\r\n\r\n", "too much non-data"},
		{"one byte a chunk", strings.Repeat("1\r\nx\r\n", 500) + "0\r\n\r\n", ""},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 7, 4096} {
			for _, bufSize := range []int{64, 4096} { // 64: a long size line fills the buffer
				t.Run(fmt.Sprintf("%s/%d/%d", tt.name, size, bufSize), func(t *testing.T) {
					got := chunkedBoth(tt.raw, size, bufSize)
					if d := cmp.Diff(got[0], got[1]); d != "" {
						t.Errorf("reads (-net/http +ours):\n%s", d)
					}
					if tt.wantErr != "" && bufSize == 4096 && !strings.Contains(got[1][len(got[1])-2], tt.wantErr) {
						t.Errorf("last read %s, want the error %q", got[1][len(got[1])-2], tt.wantErr)
					}
				})
			}
		}
	}
}

// chunkedBoth reads raw with net/http's decoder and with chunkedReader.
func chunkedBoth(raw string, size, bufSize int) [2][]string {
	wbr := bufio.NewReaderSize(strings.NewReader(raw), bufSize)
	gbr := bufio.NewReaderSize(strings.NewReader(raw), bufSize)
	return [2][]string{chunkReads(httputil.NewChunkedReader(wbr), wbr, size),
		chunkReads(&chunkedReader{r: gbr}, gbr, size)}
}

// FuzzChunkedReader: chunkedReader reads what net/http's decoder reads, fails where it fails
// with the same error, and leaves the same bytes after the body.
func FuzzChunkedReader(f *testing.F) {
	for _, s := range []string{"3\r\nabc\r\n0\r\n\r\n", "3;x\r\nabc\r\n0\r\nT: 1\r\n\r\n", "1\r\nx\r\n1\r\ny\r\n0\r\n\r\n", "ff\r\n"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, raw string, size uint8) {
		got := chunkedBoth(raw, int(size)+1, 16+int(size)*16)
		if d := cmp.Diff(got[0], got[1]); d != "" {
			t.Fatalf("reads (-net/http +ours):\n%s", d)
		}
	})
}

// A read returns the chunk's data in hand without waiting for the rest of the chunk: an
// upstream may send one chunk in pieces, and an event in the first must not wait for the next.
func TestChunkedReaderReturnsDataInHand(t *testing.T) {
	for _, raw := range []string{"10\r\ndata: a\n\n", "2\r\nab\r\n10\r\ndata: a\n\n"} {
		g := &gateReader{b: []byte(raw)}
		cr := &chunkedReader{r: bufio.NewReaderSize(g, 64)}
		var got []byte
		p := make([]byte, 64)
		for {
			n, err := cr.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				t.Fatalf("%q: a read waited for the rest of the chunk with %q in hand: %v", raw, got, err)
			}
			if strings.HasSuffix(string(got), "data: a\n\n") {
				break
			}
		}
	}
}

// Whatever prefix of a chunked stream has come, a chunked body's reads yield every data byte
// in it before they wait for more: none is held for the rest of its chunk, the CRLF after it,
// the next size line or the trailer section. (A gateReader's failure stands for a read that
// would wait on the connection: a read that returns data with it had gone on to wait.)
func TestChunkedBodyYieldsEveryPrefix(t *testing.T) {
	events := []string{"data: {\"a\":1}\n\n", ": ping\n\n", "data: {\"b\":\"مرحبا\"}\n\n", "data: [DONE]\n\n"}
	var wire strings.Builder
	var data strings.Builder
	for i, e := range events {
		ext := ""
		if i == 1 {
			ext = ";x=y"
		}
		fmt.Fprintf(&wire, "%x%s\r\n%s\r\n", len(e), ext, e)
		data.WriteString(e)
	}
	wire.WriteString("0\r\nX-Trailer: 1\r\n\r\n")
	raw := wire.String()
	for k := 1; k <= len(raw); k++ {
		want := decodedPrefix(raw[:k])
		br := bufio.NewReaderSize(&gateReader{b: []byte(raw[:k])}, 64)
		b := &answerBody{br: br, chunked: true, cr: chunkedReader{r: br}}
		var got []byte
		p := make([]byte, 16)
		var err error
		for range 1000 {
			var n int
			n, err = b.Read(p)
			got = append(got, p[:n]...)
			if n > 0 && errors.Is(err, errGate) {
				// On a connection, this read would have waited with the data in hand.
				t.Fatalf("prefix %q: a read of %q went on to wait for more", raw[:k], p[:n])
			}
			if err != nil {
				break
			}
		}
		if string(got) != want {
			t.Fatalf("prefix %q: read %q before %v, want %q", raw[:k], got, err, want)
		}
		if k == len(raw) && err != io.EOF || k < len(raw) && !errors.Is(err, errGate) {
			t.Fatalf("prefix %q: ended with %v", raw[:k], err)
		}
	}
}

// decodedPrefix is the data of a prefix of a well-formed chunked body: each chunk's bytes
// that came after its whole size line.
func decodedPrefix(raw string) string {
	var out strings.Builder
	for {
		line, rest, ok := strings.Cut(raw, "\r\n")
		if !ok {
			return out.String()
		}
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseUint(size, 16, 64)
		if err != nil || n == 0 {
			return out.String()
		}
		if uint64(len(rest)) <= n {
			return out.String() + rest
		}
		out.WriteString(rest[:n])
		raw = strings.TrimPrefix(rest[n:], "\r\n")
		if len(rest[n:]) < 2 {
			return out.String()
		}
	}
}
