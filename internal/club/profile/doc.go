// Package profile holds a user's contact details (PUT /me/profile) and the
// address policy (docs/principles.md §1.20): which e-mail address a notification goes to.
//
// Events carry no personal data, so the notifier looks the address up when it
// sends. Two policies are supported, chosen by configuration:
//
//   - [PolicyCurrent] (the default): the address in the student's profile at
//     send time. A student who fixes a typo before the mail goes out gets it
//     at the fixed address, and the address lives in one place only, which
//     keeps erasure simple.
//   - [PolicyAtEnrollment]: the address the student had when enrolling,
//     captured on the enrollment row (never in the event). The mail goes
//     where the student expected it at that moment, at the price of a second
//     copy of personal data.
//
// [Resolver] applies the policy; an enrollment without any usable address
// fails with [ErrNoAddress], a permanent error (retrying will not help).
package profile
