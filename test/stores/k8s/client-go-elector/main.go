// Command leader-elector is a candidate built on client-go's own leader election
// (k8s.io/client-go/tools/leaderelection with resourcelock.LeaseLock), for baton's interop tests:
// it contends for one Lease beside baton candidates on a real kube-apiserver.
//
// It logs `start`/`stop` lines in the format of the process tests' child log
// (test/harness/cli.ts): `KIND 0 PID CLOCK_MONOTONIC_NS WALL_MS IDENTITY`, term 0 since client-go
// has no fencing token. The "work" starts in OnStartedLeading and stops (the stop line) when
// leadership is lost or SIGTERM cancels the context — before client-go releases the Lease with
// ReleaseOnCancel, as its documentation asks of callers.
//
// Environment: K8S_SERVER, K8S_CA (PEM file), K8S_TOKEN, K8S_NAMESPACE, LEASE, IDENTITY,
// LEASE_MS, RENEW_DEADLINE_MS, RETRY_MS, CHILD_LOG, RELEASE_ON_CANCEL (default "true").
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "leader-elector: %v\n", err)
		os.Exit(78)
	}
}

func run() error {
	identity := need("IDENTITY")
	cfg := &rest.Config{
		Host:            need("K8S_SERVER"),
		BearerToken:     need("K8S_TOKEN"),
		TLSClientConfig: rest.TLSClientConfig{CAFile: need("K8S_CA")},
		UserAgent:       "baton-interop-client-go/" + identity,
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: need("K8S_NAMESPACE"), Name: need("LEASE")},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	releaseOnCancel := os.Getenv("RELEASE_ON_CANCEL") != "false"

	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	logPath := need("CHILD_LOG")
	var mu sync.Mutex
	leading := false
	line := func(kind string) {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "leader-elector: %v\n", err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s 0 %d %d %d %s\n", kind, os.Getpid(), ts.Nano(), time.Now().UnixMilli(), identity)
	}
	stopWork := func() {
		mu.Lock()
		defer mu.Unlock()
		if leading {
			leading = false
			line("stop")
		}
	}
	go func() {
		<-signals
		// The work stops first; only then may ReleaseOnCancel hand the Lease on.
		stopWork()
		cancel()
	}()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   ms("LEASE_MS"),
		RenewDeadline:   ms("RENEW_DEADLINE_MS"),
		RetryPeriod:     ms("RETRY_MS"),
		ReleaseOnCancel: releaseOnCancel,
		Name:            need("LEASE"),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				if ctx.Err() == nil {
					leading = true
					line("start")
				}
			},
			OnStoppedLeading: stopWork,
			OnNewLeader: func(id string) {
				fmt.Fprintf(os.Stderr, "leader-elector %s: the leader is %q\n", identity, id)
			},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx)
	stopWork()
	return nil
}

func need(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "leader-elector: %s is not set\n", name)
		os.Exit(64)
	}
	return v
}

func ms(name string) time.Duration {
	n, err := strconv.Atoi(need(name))
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "leader-elector: %s=%q is not a positive number of milliseconds\n", name, os.Getenv(name))
		os.Exit(64)
	}
	return time.Duration(n) * time.Millisecond
}
