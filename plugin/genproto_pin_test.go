package plugin_test

// The workspace also holds modules whose dependencies require a 2019
// google.golang.org/genproto, which still contained
// googleapis/rpc/status; grpc imports that package from the split-out
// google.golang.org/genproto/googleapis/rpc module, so workspace builds
// would see it twice ("ambiguous import"). Importing a package of a recent
// genproto from a test keeps that requirement in go.mod (go mod tidy would
// drop it otherwise) without linking anything into plugin binaries.
import _ "google.golang.org/genproto/protobuf/field_mask"
