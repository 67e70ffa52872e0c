package main

import (
	"context"
	"fmt"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/sqsconsumer/projectionhandler"
)

// functionName labels log lines and metrics.
const functionName = "analytics"

func main() {
	cfg, cfgErr := projectionhandler.LoadConfig(functionName, os.Getenv)
	logger := obs.NewLogger(os.Stdout, obs.Options{Level: cfg.LogLevel, Function: functionName})
	if cfgErr != nil {
		logger.Error("invalid configuration", obs.Err(cfgErr))
		os.Exit(1)
	}
	// The AWS SDK configuration is loaded here, once (AWS_ENDPOINT_URL
	// points it at an emulator), and handed to what builds the clients.
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		logger.Error("start", obs.Err(fmt.Errorf("load AWS config: %w", err)))
		os.Exit(1)
	}
	sdkhttp.Mend(&awsCfg)
	h, err := projectionhandler.Build(awsCfg, cfg, projection.NewStatsProjector, logger)
	if err != nil {
		logger.Error("start", obs.Err(err))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
