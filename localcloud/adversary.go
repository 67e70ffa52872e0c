package localcloud

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/clubdev/club/localcloud/internal/adversary"
	"github.com/clubdev/club/localcloud/invoke"
)

// adversarySeed is seed, or a new one when seed is 0.
func adversarySeed(seed uint64) uint64 {
	var b [8]byte
	for seed == 0 {
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	return seed
}

// startAdversary turns the adversary on with Config.Adversary, once the
// stack is provisioned: provisioning stands in for CloudFormation, which
// the adversary does not model. The seed is logged, to replay the run.
func (c *Cloud) startAdversary() error {
	if c.cfg.Adversary == "" {
		return nil
	}
	if !adversaryLayer {
		return errors.New("adversary: this local cloud was built without it (tag club_noadversary)")
	}
	if err := c.adversary.Set(c.cfg.Adversary, 0); err != nil {
		return err
	}
	c.log.Info("adversary on: the local cloud misbehaves as AWS may (docs/local-cloud.md)",
		"adversary", c.cfg.Adversary, "seed", c.adversary.Seed(),
		"replay", fmt.Sprintf("--adversary %s --adversary-seed %d", c.cfg.Adversary, c.adversary.Seed()))
	return nil
}

// Adversary returns the cloud's adversary's seed and counts.
func (c *Cloud) Adversary() AdversaryStats { return c.adversary.Stats() }

// adversaryInvoker is what a deliverer invokes functions with: the runtime,
// behind the adversary's behaviour b unless the layer was built out.
func (c *Cloud) adversaryInvoker(b adversary.Behaviour) invoke.Invoker {
	if !adversaryLayer {
		return c.runtime
	}
	return c.adversary.Invoker(c.runtime, b)
}
