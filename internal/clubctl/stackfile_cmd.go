package clubctl

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/ops/stackimport"
)

type stackFileOptions struct {
	stackName  string
	out        string
	apiURL     string
	mailURL    string
	paymentURL string
}

func newStackFileCommand(g *Globals) *cobra.Command {
	var o stackFileOptions
	cmd := &cobra.Command{
		Use:   "stack-file --stack-name NAME [--out FILE] [--api-url U] [--mail-url U] [--payment-url U]",
		Short: "Write a stack file for a CloudFormation stack (AWS, LocalStack)",
		Long: `stack-file describes a deployed CloudFormation stack and writes the stack file every
other command reads, so that they work against AWS or LocalStack as they do against
the local cloud (which writes .club/stack.json itself).

It reads the stack's outputs and parameters (DescribeStacks) and its resources
(ListStackResources) and records each resource by logical id: queue URLs, table
names, topic ARNs, function names, state machine ARNs and bucket names. The ApiUrl
output becomes api_url; JwtIssuer and JwtAudience become issuer_url and
jwt_audience; every other parameter (InboxRetentionDays, UrgentMaxAgeSeconds, ...)
is copied into outputs, except NoEcho ones. The AWS endpoint comes from the standard
configuration: with AWS_ENDPOINT_URL set (LocalStack) it is recorded in the file.

The file is written to --out, by default the --stack-file path.`,
		Example: `  # A stack on AWS, for the other commands
  AWS_PROFILE=club-prod clubctl stack-file --stack-name club-prod --out .club/prod.json
  clubctl status --stack-file .club/prod.json

  # The same stack deployed to LocalStack
  AWS_ENDPOINT_URL=http://localhost:4566 clubctl stack-file --stack-name club \
    --api-url http://localhost:4566/restapis/abc/local/_user_request_`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runStackFile(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.stackName, "stack-name", "", "CloudFormation stack name or id (required)")
	f.StringVar(&o.out, "out", "", "file to write (default: the --stack-file path)")
	f.StringVar(&o.apiURL, "api-url", "", "base URL of the HTTP API, instead of the ApiUrl output")
	f.StringVar(&o.mailURL, "mail-url", "", "base URL of the mail provider (a sandbox), if any")
	f.StringVar(&o.paymentURL, "payment-url", "", "base URL of the payment provider (a sandbox), if any")
	_ = cmd.MarkFlagRequired("stack-name")
	return cmd
}

// stackFileOutput is the --json form of the result.
type stackFileOutput struct {
	File      string         `json:"file"`
	StackName string         `json:"stack_name"`
	Counts    map[string]int `json:"counts"`
}

func runStackFile(cmd *cobra.Command, g *Globals, o stackFileOptions) error {
	ctx := cmd.Context()
	out := o.out
	if out == "" {
		out = g.StackFile
	}
	cfg, err := g.loadAWS(ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return fmt.Errorf("no AWS region configured: set AWS_REGION or AWS_PROFILE")
	}
	st, err := stackimport.Import(ctx, g.clients.cloudFormation(cfg), o.stackName, stackimport.Options{
		Endpoint: aws.ToString(cfg.BaseEndpoint), APIURL: o.apiURL, MailURL: o.mailURL, PaymentURL: o.paymentURL,
	})
	if err != nil {
		return err
	}
	if err := st.Save(out); err != nil {
		return err
	}
	counts := map[string]int{
		"queues": len(st.Queues), "tables": len(st.Tables), "topics": len(st.Topics),
		"functions": len(st.Functions), "state_machines": len(st.StateMachines), "buckets": len(st.Buckets),
		"outputs": len(st.Outputs),
	}
	if g.JSON {
		return g.PrintJSON(stackFileOutput{File: out, StackName: o.stackName, Counts: counts})
	}
	_, err = fmt.Fprintf(g.Stdout, "wrote %s: %d queues, %d tables, %d topics, %d functions, %d state machines, %d buckets, %d outputs\n",
		out, counts["queues"], counts["tables"], counts["topics"], counts["functions"], counts["state_machines"], counts["buckets"], counts["outputs"])
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
