package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net/http/httputil"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunkReads reads r to its first error in reads of size bytes, and says what each read
// returned and what was left in br after.
func chunkReads(r io.Reader, br *bufio.Reader, size int) []string {
	var out []string
	p := make([]byte, size)
	for range 1 << 16 {
		n, err := r.Read(p)
		out = append(out, fmt.Sprintf("%q %v", p[:n], err))
		if err != nil {
			break
		}
	}
	rest, _ := io.ReadAll(br)
	return append(out, fmt.Sprintf("left %q", rest))
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

// FuzzChunkedReader: chunkedReader reads what net/http's decoder reads, read for read, fails
// where it fails with the same error, and leaves the same bytes after the body.
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
