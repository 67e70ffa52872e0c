// Package dataplane builds the local cloud's data-plane endpoint on an
// engine, without the rest of the local cloud: the front, DynamoDB through
// the fidelity layer and the stream recorder, and the local cloud's own
// DynamoDB Streams API, wired as the local cloud wires them (localcloud's
// cloud.go). The test kit serves it, so that the adapters' contract suites
// and the conformance suite test what `make run` serves.
package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/ddbfidelity"
	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/internal/front"
)

// Options says which engine the endpoint is in front of.
type Options struct {
	// Engine is engine.Kumo or engine.Moto.
	Engine string
	// EngineURL is where the engine serves the AWS APIs.
	EngineURL string
	// Credentials are the access keys the endpoint hands out, with their
	// secret keys: presigned URLs are verified against them (default: the
	// local cloud's, local/local).
	Credentials map[string]string
	// Logger receives the recorder's and the front's reports (default:
	// nowhere).
	Logger *slog.Logger
}

// Endpoint is the data-plane endpoint's http.Handler. Close stops the
// copying of the engine's stream records (moto).
type Endpoint struct {
	http.Handler
	Fidelity *ddbfidelity.Handler
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// New builds the endpoint in front of the engine at o.EngineURL.
func New(o Options) (*Endpoint, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var frontOpts []front.Option
	recorderOpts := []ddbstream.Option{ddbstream.WithLogger(log)}
	switch o.Engine {
	case engine.Kumo:
	case engine.Moto:
		frontOpts = append(frontOpts, front.WithMotoEngine())
	default:
		return nil, fmt.Errorf("dataplane: unknown engine %q", o.Engine)
	}
	creds := o.Credentials
	if creds == nil {
		creds = map[string]string{"local": "local"}
	}
	frontOpts = append(frontOpts, front.WithCredentials(creds), front.WithLogger(log))
	f, err := front.New(o.EngineURL, front.Routes{}, front.NewCounter(), frontOpts...)
	if err != nil {
		return nil, err
	}
	if o.Engine == engine.Moto {
		recorderOpts = append(recorderOpts, ddbstream.WithEngineRecords(f.EngineExclusive))
	}
	streams := ddbstream.NewLog()
	recorder := ddbstream.NewRecorder(streams, f.Kumo(), recorderOpts...)
	fid := ddbfidelity.New(recorder, f.Kumo(), ddbfidelity.ProfileOf(o.Engine))
	f.SetRoutes(front.Routes{DynamoDB: fid, Streams: ddbstream.NewAPI(streams)})
	ctx, stop := context.WithCancel(context.Background())
	ep := &Endpoint{Handler: f, Fidelity: fid, stop: stop}
	if o.Engine == engine.Moto {
		ep.wg.Add(1)
		go func() {
			defer ep.wg.Done()
			recorder.FollowEngine(ctx)
		}()
	}
	return ep, nil
}

// Close stops what New started; the engine stays up.
func (e *Endpoint) Close() {
	e.stop()
	e.wg.Wait()
}
