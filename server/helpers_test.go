package server_test

import (
	"errors"
	"net"

	"testing"

	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	statusError = status.Error{Code: protocol.CodeNotFound, Message: "no such thing"}
	errPlain    = errors.New("plain failure")
)

func asNetErr(err error, ne *net.Error) bool { return errors.As(err, ne) }
