package main

// Remote command (exec/attach) over SPDY, client side, as client-go's
// tools/remotecommand does it for channel.k8s.io, v2, v3 and v4.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/spdystream"
)

const (
	protoV1 = "channel.k8s.io"
	protoV2 = "v2.channel.k8s.io"
	protoV3 = "v3.channel.k8s.io"
	protoV4 = "v4.channel.k8s.io"
	protoV5 = "v5.channel.k8s.io"
	// What client-go's SPDY executor offers, in order.
	defaultExecProtocols = protoV5 + "," + protoV4 + "," + protoV3 + "," + protoV2 + "," + protoV1

	streamTypeHeader = "streamType"
)

type execOpts struct {
	stdin, stdout, stderr, tty bool
	resizes                    []terminalSize
	statusFile                 string
}

// terminalSize marshals as {"Width":W,"Height":H}, like client-go's.
type terminalSize struct {
	Width  uint16
	Height uint16
}

// exitError carries a remote exit code (v4 NonZeroExitCode).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

type execStreams struct {
	errorS, stdinS, stdoutS, stderrS, resizeS *spdystream.Stream
}

func parseResizes(s string) ([]terminalSize, error) {
	var out []terminalSize
	for _, item := range splitList(s) {
		wh := strings.SplitN(strings.ToLower(item), "x", 2)
		if len(wh) != 2 {
			return nil, fmt.Errorf("bad size %q (want WxH)", item)
		}
		w, err1 := strconv.ParseUint(wh[0], 10, 16)
		h, err2 := strconv.ParseUint(wh[1], 10, 16)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad size %q (want WxH)", item)
		}
		out = append(out, terminalSize{Width: uint16(w), Height: uint16(h)})
	}
	return out, nil
}

func runExec(args []string) int {
	fs := flag.NewFlagSet("exec", flag.ExitOnError)
	var c commonFlags
	var o execOpts
	var resize string
	addCommonFlags(fs, &c, defaultExecProtocols)
	fs.BoolVar(&o.stdin, "i", false, "create the stdin stream and copy our stdin to it (FIN at EOF)")
	fs.BoolVar(&o.stdout, "stdout", true, "create the stdout stream")
	fs.BoolVar(&o.stderr, "stderr", true, "create the stderr stream (never with -t)")
	fs.BoolVar(&o.tty, "t", false, "tty session: no stderr stream; resize stream on v3+")
	fs.StringVar(&resize, "resize", "", "terminal sizes WxH[,WxH...] sent on the resize stream (v3+, -t)")
	fs.StringVar(&o.statusFile, "status-file", "", "write the raw error-stream bytes to this file")
	fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: spdyclient exec [flags] URL")
		fs.PrintDefaults()
		return exitUsage
	}
	var err error
	if o.resizes, err = parseResizes(resize); err != nil {
		fail(exitUsage, "%v", err)
	}
	startTimeout(c.timeout)
	raw, proto := upgrade(fs.Arg(0), &c)
	s := newSession(raw, c.pingPeriod)
	defer s.close()
	switch proto {
	case protoV5, protoV4, protoV3, protoV2:
		err = streamV2plus(s, proto, &o)
	case "", protoV1:
		err = streamV1(s, &o)
	default:
		err = fmt.Errorf("unknown negotiated protocol %q", proto)
	}
	return exitCodeFor(err)
}

func exitCodeFor(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		logf("%s", ee.msg)
		return ee.code
	default:
		logf("%v", err)
		var ce *connError
		if errors.As(err, &ce) {
			return exitConnFailed
		}
		return exitRemoteError
	}
}

// connError marks local/transport failures (exit 126) as opposed to errors
// the remote reported on the error stream (exit 1).
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }

// createStreams creates error, stdin, stdout, stderr (not with tty) and, for
// v3+, resize (tty only), in that order, each after the previous reply.
func createStreams(s *session, o *execOpts, withResize bool) (*execStreams, error) {
	var st execStreams
	h := http.Header{}
	mk := func(kind string, want bool, dst **spdystream.Stream) error {
		if !want {
			return nil
		}
		h.Set(streamTypeHeader, kind)
		var err error
		*dst, err = s.createStream(h)
		if err != nil {
			return &connError{err}
		}
		return nil
	}
	if err := mk("error", true, &st.errorS); err != nil {
		return nil, err
	}
	if err := mk("stdin", o.stdin, &st.stdinS); err != nil {
		return nil, err
	}
	if err := mk("stdout", o.stdout, &st.stdoutS); err != nil {
		return nil, err
	}
	if err := mk("stderr", o.stderr && !o.tty, &st.stderrS); err != nil {
		return nil, err
	}
	if err := mk("resize", withResize && o.tty, &st.resizeS); err != nil {
		return nil, err
	}
	return &st, nil
}

// watchErrorStream reads the whole error stream, then decodes it per version.
func watchErrorStream(st *spdystream.Stream, proto, statusFile string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		msg, err := ioutil.ReadAll(st)
		if statusFile != "" {
			if werr := ioutil.WriteFile(statusFile, msg, 0o644); werr != nil {
				logf("status-file: %v", werr)
			}
		}
		debugf("error stream: %q", msg)
		switch {
		case err != nil && err != io.EOF:
			ch <- &connError{fmt.Errorf("error reading from error stream: %v", err)}
		case len(msg) == 0:
			ch <- nil
		case proto == protoV4 || proto == protoV5:
			ch <- decodeStatusV4(msg)
		default:
			ch <- fmt.Errorf("error executing remote command: %s", msg)
		}
	}()
	return ch
}

// The metav1.Status fields client-go's v4 decoder looks at.
type statusV4 struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Details *struct {
		Causes []struct {
			Type    string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

func decodeStatusV4(msg []byte) error {
	var st statusV4
	if err := json.Unmarshal(msg, &st); err != nil {
		return fmt.Errorf("error stream protocol error: %v in %q", err, msg)
	}
	switch st.Status {
	case "Success":
		return nil
	case "Failure":
		if st.Reason != "NonZeroExitCode" {
			return errors.New(st.Message)
		}
		if st.Details == nil {
			return errors.New("error stream protocol error: details must be set")
		}
		for _, c := range st.Details.Causes {
			if c.Type != "ExitCode" {
				continue
			}
			rc, err := strconv.ParseUint(c.Message, 10, 8)
			if err != nil {
				return fmt.Errorf("error stream protocol error: invalid exit code value %q", c.Message)
			}
			return &exitError{int(rc), fmt.Sprintf("command terminated with exit code %d", rc)}
		}
		return errors.New("error stream protocol error: no ExitCode cause given")
	default:
		return errors.New("error stream protocol error: unknown error")
	}
}

// copyStdinV2 copies our stdin, then half-closes; it also closes when the
// server closes its side of stdin (client-go's second goroutine).
func copyStdinV2(st *spdystream.Stream) {
	if st == nil {
		return
	}
	var once sync.Once
	closeIt := func() { once.Do(func() { st.Close() }) }
	go func() {
		defer closeIt()
		if _, err := io.Copy(st, os.Stdin); err != nil {
			debugf("stdin copy: %v", err)
		}
		debugf("stdin EOF: half-closing the stdin stream")
	}()
	go func() {
		defer closeIt()
		io.Copy(ioutil.Discard, st)
	}()
}

func copyOut(wg *sync.WaitGroup, dst io.Writer, st *spdystream.Stream) {
	if st == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Keep draining so the spdystream frame worker never blocks.
		defer io.Copy(ioutil.Discard, st)
		if _, err := io.Copy(dst, st); err != nil {
			debugf("output copy: %v", err)
		}
	}()
}

func sendResizes(st *spdystream.Stream, sizes []terminalSize) {
	if st == nil || len(sizes) == 0 {
		return
	}
	go func() {
		enc := json.NewEncoder(st)
		for i := range sizes {
			if err := enc.Encode(&sizes[i]); err != nil {
				debugf("resize: %v", err)
				return
			}
			debugf("resize sent: %dx%d", sizes[i].Width, sizes[i].Height)
		}
	}()
}

func streamV2plus(s *session, proto string, o *execOpts) error {
	st, err := createStreams(s, o, proto != protoV2)
	if err != nil {
		return err
	}
	errCh := watchErrorStream(st.errorS, proto, o.statusFile)
	sendResizes(st.resizeS, o.resizes)
	copyStdinV2(st.stdinS)
	var wg sync.WaitGroup
	copyOut(&wg, os.Stdout, st.stdoutS)
	copyOut(&wg, os.Stderr, st.stderrS)
	wg.Wait()
	return <-errCh
}

// streamV1 follows client-go's v1: no stdin half-close, the error stream is
// watched concurrently and an error ends the session at once.
func streamV1(s *session, o *execOpts) error {
	st, err := createStreams(s, o, false)
	if err != nil {
		return err
	}
	errCh := make(chan error, 1)
	go func() {
		msg, err := ioutil.ReadAll(st.errorS)
		if o.statusFile != "" {
			ioutil.WriteFile(o.statusFile, msg, 0o644)
		}
		if err != nil && err != io.EOF {
			errCh <- &connError{fmt.Errorf("Error reading from error stream: %s", err)}
		} else if len(msg) > 0 {
			errCh <- fmt.Errorf("Error executing remote command: %s", msg)
		}
	}()
	if st.stdinS != nil {
		go io.Copy(st.stdinS, os.Stdin)
	}
	done := make(chan struct{}, 2)
	waitCount := 0
	cp := func(dst io.Writer, src *spdystream.Stream) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	if st.stdoutS != nil {
		waitCount++
		go cp(os.Stdout, st.stdoutS)
	}
	if st.stderrS != nil {
		waitCount++
		go cp(os.Stderr, st.stderrS)
	}
	for completed := 0; completed < waitCount; {
		select {
		case <-done:
			completed++
		case err := <-errCh:
			return err
		}
	}
	return nil
}
