// Command httpecho is a parity-test function for the HTTP API gateway: it
// answers with what the gateway passed it, so tests can check the event.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

type echo struct {
	RouteKey   string            `json:"route_key"`
	Path       map[string]string `json:"path_parameters"`
	Query      map[string]string `json:"query"`
	Claims     map[string]string `json:"claims"`
	Body       string            `json:"body"`
	HasAuthHdr bool              `json:"has_authorization_header"`
}

func main() {
	lambda.Start(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		e := echo{RouteKey: req.RouteKey, Path: req.PathParameters, Query: req.QueryStringParameters, Body: req.Body}
		if req.RequestContext.Authorizer != nil && req.RequestContext.Authorizer.JWT != nil {
			e.Claims = req.RequestContext.Authorizer.JWT.Claims
		}
		_, e.HasAuthHdr = req.Headers["authorization"]
		b, _ := json.Marshal(e)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"content-type": "application/json"}, Body: string(b)}, nil
	})
}
