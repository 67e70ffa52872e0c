#!/usr/bin/env bash
# Runs inside LocalStack when it is ready: nothing to seed, the stack is
# deployed from the host with SAM so that the template stays the single source
# of truth. This hook only says so in LocalStack's log.
echo "club: LocalStack ready; deploy with localstack/run-tests.sh"
