// Package pb holds the generated wire types of the plug-in bridge: the
// limiter-kind service (limiter.proto), the endpoint-policy service
// (policy.proto) and the codec service (codec.proto).
// The generated files are committed; regenerating needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative limiter.proto policy.proto codec.proto
