package provision

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

type s3API interface {
	CreateBucket(context.Context, *s3.CreateBucketInput, ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
}

func (p *provisioner) buckets(ctx context.Context) error {
	for _, b := range p.st.Buckets {
		_, err := p.c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b.Name)})
		if err != nil && !hasCode(err, "BucketAlreadyOwnedByYou") {
			return resourceError("bucket", b.Source, b.Name, err)
		}
		p.result.Buckets[b.Source] = b.Name
	}
	return nil
}
