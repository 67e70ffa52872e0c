package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3API is the part of *s3.Client the bucket writes with.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Presigner is the part of *s3.PresignClient the bucket signs URLs with.
type Presigner interface {
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

var (
	_ S3API     = (*s3.Client)(nil)
	_ Presigner = (*s3.PresignClient)(nil)
	_ Files     = (*Bucket)(nil)
)

// MaxURLExpiry is the longest a SigV4 presigned URL may work (7 days).
const MaxURLExpiry = 7 * 24 * time.Hour

// Bucket implements Files on one S3 bucket. Objects are encrypted with the
// bucket's default encryption; the bucket itself is private, so a presigned
// URL is the only way in. It is safe for concurrent use.
type Bucket struct {
	client  S3API
	presign Presigner
	name    string
}

// NewBucket returns the bucket called name. The URLs it hands out are
// addressed as client is (path-style when client uses a custom endpoint,
// see functions/exporter), so they reach the same endpoint the exporter
// writes to.
func NewBucket(client *s3.Client, name string) (*Bucket, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("exports bucket: nil S3 client"))
	}
	if name == "" {
		errs = append(errs, errors.New("exports bucket: no bucket name"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Bucket{client: client, presign: s3.NewPresignClient(client), name: name}, nil
}

// Put writes body at key; a browser saves it as fileName.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, contentType, fileName string) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:             aws.String(b.name),
		Key:                aws.String(key),
		Body:               bytes.NewReader(body),
		ContentLength:      aws.Int64(int64(len(body))),
		ContentType:        aws.String(contentType),
		ContentDisposition: aws.String(mime.FormatMediaType("attachment", map[string]string{"filename": fileName})),
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", b.name, key, err)
	}
	return nil
}

// URL presigns a GET of key that works for ttl (SigV4 query
// authentication: X-Amz-Expires counts from the signing second).
func (b *Bucket) URL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if ttl < time.Second || ttl > MaxURLExpiry {
		return "", fmt.Errorf("presign s3://%s/%s: expiry %s is outside 1s..%s", b.name, key, ttl, MaxURLExpiry)
	}
	req, err := b.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("presign s3://%s/%s: %w", b.name, key, err)
	}
	return req.URL, nil
}
