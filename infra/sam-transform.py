#!/usr/bin/env python3
"""Expand the SAM template into the CloudFormation template AWS deploys.

Usage: sam-transform.py [TEMPLATE] [--region REGION] [--account ACCOUNT]

Runs the AWS SAM translator (aws-sam-translator, the library behind
`sam deploy` and CloudFormation's AWS::Serverless transform) on TEMPLATE
(infra/template.yaml by default) with its parameters' defaults (a
CommaDelimitedList as a list, as CloudFormation passes it) and prints the
result as JSON: every AWS::Serverless resource replaced by the resources SAM
generates, among them the IAM roles and the managed policies SAM attaches.
`make validate` runs it; internal/securitytest checks its output.

Local code paths (CodeUri, DefinitionUri) are replaced by a placeholder S3
location first, as `sam validate` does: the translator only reads S3 URIs,
and `sam build` / `sam deploy` upload the code before AWS transforms it.
The managed policy ARNs come from the map bundled with the translator, so
no AWS credentials or network are needed. Exits 1, with the translator's
messages on stderr, when the template does not transform.
"""

import argparse
import json
import os
import sys

try:
    from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse
except ImportError as exc:  # pragma: no cover - reported to the user
    sys.exit(f"sam-transform: the AWS SAM translator is not installed ({exc}); pip install aws-sam-translator")

PLACEHOLDER = {"Bucket": "club-placeholder-artifacts", "Key": "placeholder"}


def replace_local_paths(template):
    for res in (template.get("Resources") or {}).values():
        props = res.get("Properties")
        if not isinstance(props, dict):
            continue
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str) \
                and not props["CodeUri"].startswith("s3://"):
            props["CodeUri"] = dict(PLACEHOLDER)
        if res.get("Type") == "AWS::Serverless::StateMachine" and isinstance(props.get("DefinitionUri"), str) \
                and not props["DefinitionUri"].startswith("s3://"):
            props["DefinitionUri"] = dict(PLACEHOLDER)


def default_parameters(template):
    """The parameters' defaults, as CloudFormation hands them to the
    transform: a CommaDelimitedList as a list."""
    values = {}
    for name, p in (template.get("Parameters") or {}).items():
        if "Default" not in p:
            continue
        value = p["Default"]
        if p.get("Type") == "CommaDelimitedList" and isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        values[name] = value
    return values


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("template", nargs="?", default=os.path.join(here, "template.yaml"))
    ap.add_argument("--region", default="us-east-1")
    args = ap.parse_args()

    with open(args.template, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    replace_local_paths(template)

    os.environ.setdefault("AWS_DEFAULT_REGION", args.region)
    policies = get_bundled_managed_policy_map("aws")
    translator = Translator(managed_policy_map=policies, sam_parser=Parser())
    try:
        out = translator.translate(sam_template=template, parameter_values=default_parameters(template),
                                   get_managed_policy_map=lambda: policies)
    except InvalidDocumentException as exc:
        for cause in exc.causes:
            print(f"sam-transform: {cause.message}", file=sys.stderr)
        sys.exit(1)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
