// spdyclient: an independent SPDY/3.1 streaming client for sluice's interop
// tests, built on Debian's spdystream (the library client-go and the kubelet
// use). It speaks the client side of remote command (exec/attach, protocols
// channel.k8s.io v1..v4) and port-forward (portforward.k8s.io) the way
// client-go does: same upgrade request, same stream order and headers, same
// half-close/reset behaviour, a PING every 5 s.
//
// Usage:
//
//	spdyclient exec [flags] URL          exec or attach (same wire protocol)
//	spdyclient pf [flags] URL PORT       forward one connection: our stdin/stdout
//	spdyclient pf-listen [flags] URL LOCAL:REMOTE...
//	                                     serve local TCP ports on one session
//
// Exit status: the remote exit code (v4 NonZeroExitCode), 0 on success,
// 1 remote/forwarding error, 2 usage, 124 --timeout reached, 125 upgrade
// refused, 126 connection or stream failure.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/spdystream"
)

const (
	exitRemoteError   = 1
	exitUsage         = 2
	exitTimeout       = 124
	exitUpgradeFailed = 125
	exitConnFailed    = 126

	headerProtocolVersion = "X-Stream-Protocol-Version"
	headerAcceptedVersion = "X-Accepted-Stream-Protocol-Versions"
	// client-go: createStreamResponseTimeout.
	createStreamTimeout = 30 * time.Second
	// client-go RoundTripperFor: PingPeriod.
	defaultPingPeriod = 5 * time.Second
	dialTimeout       = 10 * time.Second
	closeWaitTimeout  = 2 * time.Second
	maxErrorBody      = 64 * 1024
)

var verbose bool

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "spdyclient: "+format+"\n", args...)
}

func debugf(format string, args ...interface{}) {
	if verbose {
		logf(format, args...)
	}
}

func fail(code int, format string, args ...interface{}) {
	logf(format, args...)
	os.Exit(code)
}

// commonFlags are shared by every subcommand.
type commonFlags struct {
	protocols  string
	method     string
	headers    headerList
	pingPeriod time.Duration
	timeout    time.Duration
	lenient    bool
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func addCommonFlags(fs *flag.FlagSet, c *commonFlags, defProtocols string) {
	fs.StringVar(&c.protocols, "protocols", defProtocols,
		"comma-separated X-Stream-Protocol-Version values, in preference order (one header line each; empty: none)")
	fs.StringVar(&c.method, "method", "POST", "HTTP method of the upgrade request")
	fs.Var(&c.headers, "H", "extra request header 'Name: value' (repeatable)")
	fs.DurationVar(&c.pingPeriod, "ping-period", defaultPingPeriod, "SPDY PING period (0: none)")
	fs.DurationVar(&c.timeout, "timeout", 0, "give up after this long, exit 124 (0: never)")
	fs.BoolVar(&c.lenient, "lenient", false, "accept a chosen protocol that was not offered (client-go does)")
	fs.BoolVar(&verbose, "v", false, "log protocol events to stderr")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bufferedConn reads through the bufio.Reader that parsed the response head,
// so SPDY bytes that arrived with the 101 are not lost.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// upgrade sends the SPDY upgrade request and returns the raw connection and
// the negotiated protocol. Any refusal exits with exitUpgradeFailed.
func upgrade(rawURL string, c *commonFlags) (net.Conn, string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		fail(exitUsage, "bad URL %q", rawURL)
	}
	if u.Scheme != "http" {
		fail(exitUsage, "only http:// URLs are supported, got %q", rawURL)
	}
	req, err := http.NewRequest(c.method, u.String(), nil)
	if err != nil {
		fail(exitUsage, "bad request: %v", err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	offered := splitList(c.protocols)
	for _, p := range offered {
		req.Header.Add(headerProtocolVersion, p)
	}
	for _, h := range c.headers {
		kv := strings.SplitN(h, ":", 2)
		if len(kv) != 2 {
			fail(exitUsage, "bad header %q (want 'Name: value')", h)
		}
		req.Header.Add(strings.TrimSpace(kv[0]), strings.TrimSpace(kv[1]))
	}
	conn, err := net.DialTimeout("tcp", u.Host, dialTimeout)
	if err != nil {
		fail(exitConnFailed, "dial %s: %v", u.Host, err)
	}
	if err := req.Write(conn); err != nil {
		fail(exitConnFailed, "write upgrade request: %v", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		fail(exitConnFailed, "read upgrade response: %v", err)
	}
	checkUpgradeResponse(resp, offered, c.lenient)
	proto := resp.Header.Get(headerProtocolVersion)
	debugf("upgraded: %s %s, protocol %q", c.method, u.Path, proto)
	return &bufferedConn{Conn: conn, r: br}, proto
}

func checkUpgradeResponse(resp *http.Response, offered []string, lenient bool) {
	connHdr := strings.ToLower(resp.Header.Get("Connection"))
	upHdr := strings.ToLower(resp.Header.Get("Upgrade"))
	if resp.StatusCode != http.StatusSwitchingProtocols ||
		!strings.Contains(connHdr, "upgrade") || !strings.Contains(upHdr, "spdy/3.1") {
		body := make([]byte, maxErrorBody)
		n, _ := readFull(resp.Body, body)
		accepted := resp.Header.Values(headerAcceptedVersion)
		fail(exitUpgradeFailed, "upgrade failed: HTTP %d; accepted=%q; body: %s",
			resp.StatusCode, accepted, strings.TrimSpace(string(body[:n])))
	}
	proto := resp.Header.Get(headerProtocolVersion)
	if proto == "" || lenient {
		return
	}
	for _, p := range offered {
		if p == proto {
			return
		}
	}
	fail(exitUpgradeFailed, "upgrade failed: server chose %q, which was not offered", proto)
}

func readFull(r interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// session wraps a client spdystream connection like apimachinery's
// httpstream/spdy connection: streams are created one at a time, each waiting
// for its SYN_REPLY; Close resets every stream still registered, then GOAWAY.
type session struct {
	conn    *spdystream.Connection
	mu      sync.Mutex
	streams map[uint32]*spdystream.Stream
	done    chan struct{}
}

func newSession(raw net.Conn, pingPeriod time.Duration) *session {
	conn, err := spdystream.NewConnection(raw, false)
	if err != nil {
		fail(exitConnFailed, "spdy: %v", err)
	}
	s := &session{conn: conn, streams: map[uint32]*spdystream.Stream{}, done: make(chan struct{})}
	go conn.Serve(spdystream.NoOpStreamHandler)
	if pingPeriod > 0 {
		go s.pingLoop(pingPeriod)
	}
	return s
}

func (s *session) pingLoop(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.conn.CloseChan():
			return
		case <-t.C:
			if rtt, err := s.conn.Ping(); err != nil {
				debugf("ping failed: %v", err)
			} else {
				debugf("ping rtt %v", rtt)
			}
		}
	}
}

func (s *session) createStream(h http.Header) (*spdystream.Stream, error) {
	st, err := s.conn.CreateStream(h, nil, false)
	if err != nil {
		return nil, err
	}
	if err := st.WaitTimeout(createStreamTimeout); err != nil {
		return nil, fmt.Errorf("stream %v: %v", h, err)
	}
	s.mu.Lock()
	s.streams[st.Identifier()] = st
	s.mu.Unlock()
	debugf("stream %d created: %v", st.Identifier(), h)
	return st, nil
}

func (s *session) removeStreams(sts ...*spdystream.Stream) {
	s.mu.Lock()
	for _, st := range sts {
		if st != nil {
			delete(s.streams, st.Identifier())
		}
	}
	s.mu.Unlock()
}

func (s *session) close() {
	select {
	case <-s.done:
		return
	default:
		close(s.done)
	}
	s.mu.Lock()
	for id, st := range s.streams {
		st.Reset()
		delete(s.streams, id)
	}
	s.mu.Unlock()
	s.conn.Close()
	debugf("GOAWAY sent, waiting for shutdown")
	s.conn.Wait(closeWaitTimeout)
	debugf("session closed")
}

func startTimeout(d time.Duration) {
	if d <= 0 {
		return
	}
	time.AfterFunc(d, func() { fail(exitTimeout, "timed out after %v", d) })
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  spdyclient exec [flags] URL
  spdyclient pf [flags] URL PORT
  spdyclient pf-listen [flags] URL [LOCAL:]REMOTE...
run 'spdyclient SUBCOMMAND -h' for the flags
`)
	os.Exit(exitUsage)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "exec", "attach":
		os.Exit(runExec(os.Args[2:]))
	case "pf":
		os.Exit(runPortForwardStdio(os.Args[2:]))
	case "pf-listen":
		os.Exit(runPortForwardListen(os.Args[2:]))
	default:
		usage()
	}
}
