// Package config holds the configuration helpers every program of the stack
// shares: [ParseDuration] for settings such as "7d" or "60s", and [Globals],
// the settings the SAM template gives every function (Globals.Function
// environment: table names, retention periods, address policy).
//
// Only a program's main reads the environment; it passes os.Getenv (or, in
// tests, a map lookup) to [LoadGlobals], which reads every variable once and
// reports every problem at once with errors.Join, so a misconfigured function
// fails at start with one complete message instead of on its first request.
//
// The package is pure and safe for concurrent use.
package config
