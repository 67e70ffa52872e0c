package esm

import (
	"fmt"
	"strings"
)

// arn is the parsed form of arn:partition:service:region:account:resource.
type arn struct {
	Partition, Service, Region, Account, Resource string
}

func parseARN(s string) (arn, error) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] == "" || parts[5] == "" {
		return arn{}, fmt.Errorf("%q is not an ARN", s)
	}
	return arn{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4], Resource: parts[5]}, nil
}

// functionARN returns the ARN of a function given by name (or already by
// ARN), in the region and account of the event source.
func functionARN(function string, source arn) string {
	if strings.HasPrefix(function, "arn:") {
		return function
	}
	return fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", source.Partition, source.Region, source.Account, function)
}
