// Package infra holds the SAM template (template.yaml), the single source
// of truth for the stack's resources, and the script that expands it the
// way AWS does (sam-transform.py). It has no code: its tests check the
// template, and the files around it, against what an operator deploying
// it relies on: the operations dashboard, the build settings of
// `make deploy`, and the LocalStack stack (localstack/).
package infra
