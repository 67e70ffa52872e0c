// Package asl parses, validates and evaluates the Amazon States Language
// (JSONPath flavour) as AWS Step Functions runs it: definitions, paths
// (InputPath, OutputPath, ResultPath, ItemsPath) with JSONPath array indexes,
// slices, wildcards and filters, payload templates (Parameters,
// ResultSelector, ItemSelector), intrinsic functions, Choice rules and the
// ErrorEquals matching of Retry and Catch.
//
// Parse is strict: every field it does not implement, such as JSONata's
// Arguments/Output/Assign or Distributed Map's ItemReader, is reported as a
// Diagnostic naming the field and its location, never skipped. All problems
// of a definition are reported at once.
//
// Values are JSON decoded into `any` with numbers as json.Number. Nothing in
// this package modifies a value in place: ResultPath copies the objects on
// its path and shares the rest, so values may be shared freely between
// goroutines. The package is stateless and safe for concurrent use.
package asl
