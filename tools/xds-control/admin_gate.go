package main

// The admin's gate: a Host check (DNS rebinding) on every request, and the run's token on all
// but GET /healthz. The token comes from MESH_XDS_TOKEN, never the command line, which every
// user of the host can read; unset, the admin is open (a standalone plane, as before).

import (
	"crypto/subtle"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

const tokenEnv = "MESH_XDS_TOKEN"

const unauthorized = `{"error": "this admin needs the run's token: send the header ` +
	"`Authorization: Bearer <token>`" + ` (the plane's ` + tokenEnv +
	`; mesh up records it as admin_token in its mesh.json)"}` + "\n"

const wrongHost = `{"error": "use 127.0.0.1 or localhost"}` + "\n"

// adminToken is MESH_XDS_TOKEN, trimmed; "" leaves the admin open.
func adminToken() string {
	return strings.TrimSpace(os.Getenv(tokenEnv))
}

// gated answers 403 to a Host other than the admin's own address or 127.0.0.1 / localhost with
// its port (a DNS-rebinding page names its own host), and 401 to a request without `token`
// (GET /healthz, which readiness probes ask, excepted), before `next` runs.
func gated(next http.Handler, bound *net.TCPAddr, token string) http.Handler {
	port := strconv.Itoa(bound.Port)
	hosts := map[string]bool{
		strings.ToLower(bound.String()):     true,
		net.JoinHostPort("127.0.0.1", port): true,
		net.JoinHostPort("localhost", port): true,
	}
	expected := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[strings.ToLower(r.Host)] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(wrongHost))
			return
		}
		open := r.Method == http.MethodGet && r.URL.Path == "/healthz"
		if token != "" && !open && !bearerMatches(r.Header.Get("Authorization"), expected) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("WWW-Authenticate", `Bearer realm="mesh-xds"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(unauthorized))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerMatches compares in constant time, so the answer's timing says nothing of the token.
func bearerMatches(header string, expected []byte) bool {
	const scheme = "bearer "
	if len(header) < len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return false
	}
	given := []byte(strings.TrimSpace(header[len(scheme):]))
	return subtle.ConstantTimeCompare(given, expected) == 1
}
