package localcloud

import (
	"context"
	"fmt"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/localcloud/internal/adversary"
	"github.com/clubdev/club/localcloud/internal/schedule"
)

// startSchedules fires the template's schedules (EventBridge rules and
// Scheduler schedules never fire in kumo), at Config.ScheduleSpeed.
func (c *Cloud) startSchedules(ctx context.Context) error {
	for _, fn := range c.stack.Functions {
		for _, ev := range fn.Schedules {
			name := ev.RuleName
			if name == "" {
				name = fn.Source + "-" + ev.Name
			}
			opts := schedule.Options{Speed: c.cfg.ScheduleSpeed}
			if c.cfg.ScheduleSpeed == 1 {
				opts.LastFire, opts.OnFire = c.persist.scheduleFires(name)
			}
			r, err := schedule.New(schedule.Schedule{
				Name: name, FunctionName: fn.Name, Expression: ev.Expression, Input: ev.Input, Enabled: ev.Enabled,
			}, c.adversaryInvoker(adversary.LambdaAsyncRetry), clock.Real{}, c.log.With("schedule", name), opts)
			if err != nil {
				return fmt.Errorf("function %s schedule %s: %w", fn.Source, ev.Name, err)
			}
			c.run(ctx, "schedule "+name, r.Run)
		}
	}
	return nil
}
