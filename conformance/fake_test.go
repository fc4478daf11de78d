package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// The reference fake lives in conformancetest so that other packages' tests can use it as an
// upstream; these names keep this package's tests short.
const (
	fakeModel = conformancetest.Model
	fakeEmbed = conformancetest.EmbeddingModel
	fakeKey   = conformancetest.APIKey
)

var fakeNow = conformancetest.Now

type fault = conformancetest.Fault

const (
	faultNoDone            = conformancetest.FaultNoDone
	faultWrongObject       = conformancetest.FaultWrongObject
	faultFlatError         = conformancetest.FaultFlatError
	faultUsageEveryChunk   = conformancetest.FaultUsageEveryChunk
	faultNoRole            = conformancetest.FaultNoRole
	faultIDChanges         = conformancetest.FaultIDChanges
	faultArgsObject        = conformancetest.FaultArgsObject
	faultNoEmbeddingsTools = conformancetest.FaultNoEmbeddingsTools
)

func newFake(t *testing.T, faults ...fault) (*conformancetest.Handler, *httptest.Server) {
	t.Helper()
	return newWrappedFake(t, func(h http.Handler) http.Handler { return h }, faults...)
}

// newWrappedFake serves the fake through wrap, for tests that break one
// route more crudely than a fault does.
func newWrappedFake(t *testing.T, wrap func(http.Handler) http.Handler, faults ...fault) (*conformancetest.Handler, *httptest.Server) {
	t.Helper()
	f := conformancetest.NewHandler(faults...)
	srv := httptest.NewServer(wrap(f))
	t.Cleanup(srv.Close)
	return f, srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
