// Command serverurl prints, for each kubeconfig server in a JSON list on stdin, whether client-go can reach it:
// rest.DefaultServerURL (k8s.io/client-go rest/url_utils.go: url.Parse, a bare host:port given a scheme, the path
// kept as a prefix), then what net/http dials (transport.go: only http and https, a Host, the port from the URL).
package main

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

type result struct {
	Server string `json:"server"`
	Host   string `json:"host,omitempty"`
	Error  string `json:"error,omitempty"`
}

func check(server string) (string, string) {
	if server == "" {
		return "", "host must be a URL or a host:port pair"
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.Contains(server, "://") {
			// client-go retries with "https://" in front, whose host is then the old scheme ("https"): no server
			return "", "not a URL client-go can read: https://" + server
		}
		u, err = url.Parse("https://" + server) // defaultTLS: the kubeconfig carries a CA
		if err != nil {
			return "", err.Error()
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "unsupported protocol scheme " + strconv.Quote(u.Scheme)
	}
	if u.Hostname() == "" {
		return "", "http: no Host in request URL"
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", "invalid port " + strconv.Quote(port) // dial: port 0 never connects, past 65535 is refused
		}
	}
	if _, _, err := net.SplitHostPort(net.JoinHostPort(u.Hostname(), "443")); err != nil {
		return "", err.Error()
	}
	return u.Hostname(), ""
}

func main() {
	var servers []string
	if err := json.NewDecoder(os.Stdin).Decode(&servers); err != nil {
		panic(err)
	}
	results := []result{}
	for _, s := range servers {
		host, problem := check(s)
		results = append(results, result{Server: s, Host: host, Error: problem})
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	out.SetEscapeHTML(false)
	if err := out.Encode(results); err != nil {
		panic(err)
	}
}
