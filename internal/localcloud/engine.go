package localcloud

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sivchari/kumo"

	"github.com/clubdev/club/internal/localcloud/engine"
)

// The engines Config.Engine accepts (see package engine).
const (
	EngineKumo = engine.Kumo
	EngineMoto = engine.Moto
)

// dataPlane is a running engine.
type dataPlane interface {
	// URL is where it serves the AWS APIs.
	URL() string
	// KumoURL, when not empty, is a kumo server for the services the engine
	// does not serve (engine.KumoServices).
	KumoURL() string
	// Close stops it; safe to call more than once.
	Close() error
}

// startEngine starts the named engine.
func startEngine(ctx context.Context, name string, logDir string, log *slog.Logger) (dataPlane, error) {
	switch name {
	case "", engine.Kumo:
		return kumoEngine{kumo.NewServer()}, nil
	case engine.Moto:
		m, err := engine.StartMoto(ctx, engine.MotoOptions{LogFile: filepath.Join(logDir, "moto.log"), Logger: log, AccountID: AccountID})
		if err != nil {
			return nil, err
		}
		return motoEngine{MotoServer: m, kumo: kumo.NewServer()}, nil
	default:
		return nil, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(engine.Names, ", "))
	}
}

type kumoEngine struct{ srv *kumo.Server }

func (k kumoEngine) URL() string     { return k.srv.URL }
func (k kumoEngine) KumoURL() string { return "" }
func (k kumoEngine) Close() error {
	k.srv.Close()
	return nil
}

type motoEngine struct {
	*engine.MotoServer
	kumo *kumo.Server
}

func (m motoEngine) KumoURL() string { return m.kumo.URL }
func (m motoEngine) Close() error {
	m.kumo.Close()
	return m.MotoServer.Close()
}
