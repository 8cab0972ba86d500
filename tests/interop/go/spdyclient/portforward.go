package main

// Port forward over SPDY (portforward.k8s.io), client side, as client-go's
// tools/portforward does it: per forwarded connection an error stream
// (half-closed at once) and a data stream sharing port and requestID headers.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/spdystream"
)

const (
	protoPortForward  = "portforward.k8s.io"
	portHeader        = "port"
	requestIDHeader   = "requestID"
	streamTypeError   = "error"
	streamTypeData    = "data"
	listenAddr        = "127.0.0.1"
	closedConnMessage = "use of closed network connection"
)

type forwarder struct {
	s      *session
	mu     sync.Mutex
	nextID int
}

func (f *forwarder) requestID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextID
	f.nextID++
	return id
}

// forward runs one forwarded connection over the session: local is read
// into the data stream and the data stream written to out. It returns the
// text the server wrote on the error stream, as an error.
func (f *forwarder) forward(local io.Reader, out io.Writer, localName string, remote uint16) error {
	id := f.requestID()
	h := http.Header{}
	h.Set(streamTypeHeader, streamTypeError)
	h.Set(portHeader, strconv.Itoa(int(remote)))
	h.Set(requestIDHeader, strconv.Itoa(id))
	errS, err := f.s.createStream(h)
	if err != nil {
		return &connError{fmt.Errorf("error creating error stream for port %s -> %d: %v", localName, remote, err)}
	}
	// We never write on it.
	errS.Close()
	defer f.s.removeStreams(errS)
	errCh := make(chan error, 1)
	go func() {
		msg, err := ioutil.ReadAll(errS)
		switch {
		case err != nil && err != io.EOF:
			errCh <- &connError{fmt.Errorf("error reading from error stream for port %s -> %d: %v", localName, remote, err)}
		case len(msg) > 0:
			errCh <- fmt.Errorf("an error occurred forwarding %s -> %d: %s", localName, remote, msg)
		}
		close(errCh)
	}()

	h.Set(streamTypeHeader, streamTypeData)
	dataS, err := f.s.createStream(h)
	if err != nil {
		return &connError{fmt.Errorf("error creating forwarding stream for port %s -> %d: %v", localName, remote, err)}
	}
	defer f.s.removeStreams(dataS)
	// client-go 1.32 tears the pair down with a reset once it is done.
	defer dataS.Reset()
	copyBothWays(local, out, dataS)
	debugf("request %d: data stream done, waiting for the error stream", id)
	err = <-errCh
	debugf("request %d: error stream done", id)
	return err
}

// copyBothWays returns once the remote side finished (or the local read
// failed); local EOF half-closes the data stream.
func copyBothWays(local io.Reader, out io.Writer, dataS *spdystream.Stream) {
	localError := make(chan struct{})
	remoteDone := make(chan struct{})
	go func() {
		if _, err := io.Copy(out, dataS); err != nil && !strings.Contains(err.Error(), closedConnMessage) {
			debugf("copy remote -> local: %v", err)
		}
		close(remoteDone)
	}()
	go func() {
		defer dataS.Close()
		if _, err := io.Copy(dataS, local); err != nil && !strings.Contains(err.Error(), closedConnMessage) {
			debugf("copy local -> remote: %v", err)
			close(localError)
		}
	}()
	select {
	case <-remoteDone:
	case <-localError:
	}
}

func parsePort(s string) (uint16, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(p), nil
}

// pf URL PORT: one forwarded connection joined to our stdin/stdout.
func runPortForwardStdio(args []string) int {
	fs := flag.NewFlagSet("pf", flag.ExitOnError)
	var c commonFlags
	addCommonFlags(fs, &c, protoPortForward)
	fs.Parse(args)
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: spdyclient pf [flags] URL PORT")
		fs.PrintDefaults()
		return exitUsage
	}
	remote, err := parsePort(fs.Arg(1))
	if err != nil {
		fail(exitUsage, "%v", err)
	}
	startTimeout(c.timeout)
	raw, proto := upgrade(fs.Arg(0), &c)
	if proto != protoPortForward {
		fail(exitUpgradeFailed, "unable to negotiate protocol: server chose %q", proto)
	}
	s := newSession(raw, c.pingPeriod)
	defer s.close()
	f := &forwarder{s: s}
	return exitCodeFor(f.forward(os.Stdin, os.Stdout, "stdio", remote))
}

type portPair struct{ local, remote uint16 }

func parsePairs(args []string) ([]portPair, error) {
	var out []portPair
	for _, a := range args {
		lr := strings.SplitN(a, ":", 2)
		var p portPair
		var err error
		if len(lr) == 1 {
			if p.remote, err = parsePort(lr[0]); err != nil {
				return nil, err
			}
			p.local = p.remote
		} else {
			if p.local, err = parsePort(lr[0]); err != nil {
				return nil, err
			}
			if p.remote, err = parsePort(lr[1]); err != nil {
				return nil, err
			}
		}
		if p.remote == 0 {
			return nil, fmt.Errorf("remote port must be > 0 in %q", a)
		}
		out = append(out, p)
	}
	return out, nil
}

// pf-listen URL [LOCAL:]REMOTE...: like kubectl port-forward. LOCAL 0 picks a
// free port; "Forwarding from 127.0.0.1:L -> R" is printed for each.
func runPortForwardListen(args []string) int {
	fs := flag.NewFlagSet("pf-listen", flag.ExitOnError)
	var c commonFlags
	addCommonFlags(fs, &c, protoPortForward)
	fs.Parse(args)
	if fs.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: spdyclient pf-listen [flags] URL [LOCAL:]REMOTE...")
		fs.PrintDefaults()
		return exitUsage
	}
	pairs, err := parsePairs(fs.Args()[1:])
	if err != nil {
		fail(exitUsage, "%v", err)
	}
	startTimeout(c.timeout)
	raw, proto := upgrade(fs.Arg(0), &c)
	if proto != protoPortForward {
		fail(exitUpgradeFailed, "unable to negotiate protocol: server chose %q", proto)
	}
	s := newSession(raw, c.pingPeriod)
	f := &forwarder{s: s}
	lost := make(chan error, 1)
	for _, p := range pairs {
		ln, err := net.Listen("tcp", net.JoinHostPort(listenAddr, strconv.Itoa(int(p.local))))
		if err != nil {
			fail(exitConnFailed, "listen: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		fmt.Printf("Forwarding from %s:%d -> %d\n", listenAddr, port, p.remote)
		go f.serve(ln, p.remote, lost)
	}
	return waitListen(s, lost)
}

func (f *forwarder) serve(ln net.Listener, remote uint16, lost chan<- error) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		debugf("Handling connection for %d", remote)
		go func() {
			defer conn.Close()
			err := f.forward(conn, conn, conn.LocalAddr().String(), remote)
			if err != nil {
				// client-go: an error-stream message closes the whole session.
				select {
				case lost <- err:
				default:
				}
			}
		}()
	}
}

// waitListen runs until a signal (exit 0), a forwarding error (exit 1) or the
// server closing the session (exit 1, "lost connection to pod").
func waitListen(s *session, lost <-chan error) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	code := 0
	select {
	case <-sig:
	case err := <-lost:
		logf("%v", err)
		code = exitRemoteError
		var ce *connError
		if errors.As(err, &ce) {
			code = exitConnFailed
		}
	case <-s.conn.CloseChan():
		logf("lost connection to pod")
		code = exitRemoteError
	}
	s.close()
	return code
}
