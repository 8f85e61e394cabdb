// Command nullwebhook answers every AdmissionReview at once, allowed, with the one patch
// the chain bench looks for (a placement annotation): the floor of what kube-apiserver
// measures for a webhook on this machine, against which topospread's own figures read
// (bench/bench_chain.py --floor). It listens as a `topospread serve --share-port`
// replica does: TLS from --cert-dir, HTTP/1.1, SO_REUSEPORT on --bind.
package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		UID    string `json:"uid"`
		Object struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"object"`
	} `json:"request"`
}

// SO_REUSEPORT on Linux (the syscall package does not name it).
const soReusePort = 0xf

const note = `{"nodes":0,"feasible":0}`

func answer(mutate bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": in.Request.UID, "allowed": true}
		if mutate {
			var ops []map[string]any
			if in.Request.Object.Metadata.Annotations == nil {
				ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations",
					"value": map[string]string{}})
			}
			ops = append(ops, map[string]any{"op": "add",
				"path": "/metadata/annotations/topospread.io~1placement", "value": note})
			patch, _ := json.Marshal(ops)
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString(patch)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": in.APIVersion, "kind": in.Kind, "response": resp})
	}
}

func main() {
	certDir := flag.String("cert-dir", "", "directory holding tls.crt and tls.key")
	bind := flag.String("bind", "127.0.0.1:8443", "address to listen on (shared)")
	flag.Parse()
	cert, err := tls.LoadX509KeyPair(filepath.Join(*certDir, "tls.crt"),
		filepath.Join(*certDir, "tls.key"))
	if err != nil {
		log.Fatal(err)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, soReusePort, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", *bind)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", answer(true))
	mux.HandleFunc("/validate", answer(false))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{
		Handler:     mux,
		IdleTimeout: 120 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert},
			NextProtos: []string{"http/1.1"}},
		// HTTP/1.1 only, as topospread serves: no HTTP/2 upgrade.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Fprintf(os.Stderr, "ready: joined the shared port %s\n", *bind)
	if err := srv.ServeTLS(ln, "", ""); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
