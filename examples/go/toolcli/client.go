// Package toolcli is a small client for the tool-cli daemon, with nothing but the Go standard
// library. It does what docs/protocol.md asks of every client:
//
//   - Discovery: TOOL_CLI_PORT + TOOL_CLI_TOKEN (and TOOL_CLI_HOST) from the environment, else
//     TOOL_CLI_SOCKET + TOOL_CLI_TOKEN, else the runtime file daemon.json in
//     $TOOL_CLI_RUNTIME_DIR, else $XDG_RUNTIME_DIR/tool-cli, else <tmp>/tool-cli-<uid>.
//   - Identity before trust: before the token is sent, the listener must prove it holds it
//     (POST /identity with a fresh nonce and the token's public id; the answer is
//     HMAC-SHA256(token, "tool-cli-identity-v1\n" + nonce + "\n" + Host), compared in constant
//     time), so a stale port now held by another program never sees the token.
//   - JSON-RPC 2.0 over HTTP/1.1 POST / with Authorization: Bearer.
//   - Errors as values of type *Error with Code (the JSON-RPC code, 0 for a failure on this
//     side), Kind (the daemon's data.kind, e.g. "unknownTool", or this package's own:
//     "noDaemon", "unreachable", "identityUnproven", "noIdentityProof", "unknownToken",
//     "tokenRefused", "http", "protocol") and Data.
//
// A tool that runs and fails is not an error: CallTool returns its result with isError: true.
package toolcli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const identityContext = "tool-cli-identity-v1"

// Error is every failure of a request.
type Error struct {
	// Code is the JSON-RPC error code, or 0 for a failure on the client's side.
	Code int
	// Kind is the daemon's data.kind, or the client's own kind of failure.
	Kind string
	// Message says what went wrong.
	Message string
	// Data is the daemon's data object (nil for the client's own failures).
	Data map[string]any
}

func (e *Error) Error() string { return e.Message }

// Client talks to one daemon.
type Client struct {
	host, socket, token string
	port                int
	requireIdentity     bool
	proven              bool
	nextID              int
	http                *http.Client
}

// New returns a client of the daemon at host:port (or the Unix socket, when socket is set).
func New(host string, port int, socket, token string, timeout time.Duration) *Client {
	transport := &http.Transport{DisableKeepAlives: true}
	if socket != "" {
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", socket)
		}
	}
	return &Client{
		host: host, port: port, socket: socket, token: token, requireIdentity: true,
		http: &http.Client{Timeout: timeout, Transport: transport},
	}
}

// FromEnv finds the daemon the way tool-cli does.
func FromEnv(timeout time.Duration) (*Client, error) {
	token, host := os.Getenv("TOOL_CLI_TOKEN"), os.Getenv("TOOL_CLI_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	var client *Client
	if portText := os.Getenv("TOOL_CLI_PORT"); token != "" && portText != "" {
		port, err := strconv.Atoi(portText)
		if err != nil || port <= 0 || port > 65535 {
			return nil, &Error{Kind: "noDaemon", Message: fmt.Sprintf(
				"TOOL_CLI_PORT must be a port number, got %q", portText)}
		}
		client = New(host, port, "", token, timeout)
	} else if socket := os.Getenv("TOOL_CLI_SOCKET"); token != "" && socket != "" {
		client = New("localhost", 0, socket, token, timeout)
	} else {
		path := filepath.Join(RuntimeDir(), "daemon.json")
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, &Error{Kind: "noDaemon", Message: fmt.Sprintf(
				"no tool-cli daemon found: TOOL_CLI_PORT/TOOL_CLI_TOKEN are unset and the "+
					"runtime file cannot be read (%v); start one with `tool-cli daemon start`", err)}
		}
		var runtime struct {
			Host   string `json:"host"`
			Port   int    `json:"port"`
			Token  string `json:"token"`
			Socket string `json:"socket"`
		}
		if err := json.Unmarshal(text, &runtime); err != nil {
			return nil, &Error{Kind: "noDaemon", Message: fmt.Sprintf(
				"the runtime file %s is not valid JSON: %v", path, err)}
		}
		if token == "" {
			token = runtime.Token
		}
		if runtime.Host != "" {
			host = runtime.Host
		}
		client = New(host, runtime.Port, runtime.Socket, token, timeout)
	}
	client.requireIdentity = os.Getenv("TOOL_CLI_REQUIRE_IDENTITY") != "0"
	return client, nil
}

// RuntimeDir is the directory of the daemon's runtime file.
func RuntimeDir() string {
	if dir := os.Getenv("TOOL_CLI_RUNTIME_DIR"); dir != "" {
		return dir
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "tool-cli")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("tool-cli-%d", os.Getuid()))
}

// TokenID is the token's public id: the first 8 bytes of SHA-256(token) in hex.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// Address is host:port or the socket's path, for messages.
func (c *Client) Address() string {
	if c.socket != "" {
		return c.socket
	}
	return net.JoinHostPort(c.host, strconv.Itoa(c.port))
}

// Port is the daemon's TCP port (0 on a Unix socket).
func (c *Client) Port() int { return c.port }

func (c *Client) hostHeader() string {
	if c.socket != "" {
		return "localhost"
	}
	return net.JoinHostPort(c.host, strconv.Itoa(c.port))
}

func (c *Client) post(path string, headers map[string]string, body []byte) (int, []byte, error) {
	request, err := http.NewRequest("POST", "http://"+c.hostHeader()+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, &Error{Kind: "unreachable", Message: err.Error()}
	}
	request.Host = c.hostHeader()
	for name, value := range headers {
		request.Header.Set(name, value)
	}
	response, err := c.http.Do(request)
	if err != nil {
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			return 0, nil, &Error{Kind: "timeout", Message: fmt.Sprintf(
				"no answer from the daemon at %s within %s", c.Address(), c.http.Timeout)}
		}
		return 0, nil, &Error{Kind: "unreachable", Message: fmt.Sprintf(
			"cannot reach the tool-cli daemon at %s (%v); is it running? start one with "+
				"`tool-cli daemon start`", c.Address(), err)}
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(response.Body)
	if err != nil {
		return 0, nil, &Error{Kind: "unreachable", Message: fmt.Sprintf(
			"the connection to the daemon at %s broke: %v", c.Address(), err)}
	}
	return response.StatusCode, answer, nil
}

// proveIdentity checks that the listener holds the token before the token is sent.
func (c *Client) proveIdentity() error {
	nonceBytes := make([]byte, 32)
	if _, err := rand.Read(nonceBytes); err != nil {
		return &Error{Kind: "identityUnproven", Message: "cannot make a nonce: " + err.Error()}
	}
	nonce := hex.EncodeToString(nonceBytes)
	status, body, err := c.post("/identity", map[string]string{
		"x-tool-cli-nonce": nonce, "x-tool-cli-token-id": TokenID(c.token)}, nil)
	if err != nil {
		return err
	}
	switch {
	case status == 200:
		var answer struct {
			Proof string `json:"proof"`
		}
		_ = json.Unmarshal(body, &answer)
		presented, decodeErr := hex.DecodeString(strings.ToLower(answer.Proof))
		mac := hmac.New(sha256.New, []byte(c.token))
		mac.Write([]byte(identityContext + "\n" + nonce + "\n" + c.hostHeader()))
		if decodeErr != nil || !hmac.Equal(presented, mac.Sum(nil)) {
			return &Error{Kind: "identityUnproven", Message: fmt.Sprintf(
				"the listener at %s did not prove it holds the token, so the token was not "+
					"sent (a stale TOOL_CLI_PORT, or another program there?)", c.Address())}
		}
	case status == 403 && bytes.Contains(body, []byte("unknownTokenId")):
		return &Error{Kind: "unknownToken", Message: fmt.Sprintf(
			"the daemon at %s knows no live token with this id (revoked, expired, or another "+
				"daemon's); the token was not sent", c.Address())}
	case (status == 401 || status == 404) && !c.requireIdentity:
		// A tool-cli 1.x bridge, allowed by TOOL_CLI_REQUIRE_IDENTITY=0.
	case status == 401 || status == 404:
		return &Error{Kind: "noIdentityProof", Message: fmt.Sprintf(
			"the listener at %s does not prove its identity (HTTP %d; a tool-cli 1.x "+
				"bridge?), so the token was not sent", c.Address(), status)}
	default:
		return &Error{Kind: "identityUnproven", Message: fmt.Sprintf(
			"the identity check at %s answered HTTP %d", c.Address(), status)}
	}
	c.proven = true
	return nil
}

// Call sends any JSON-RPC method and decodes its result into result (unless nil).
func (c *Client) Call(method string, params any, result any) error {
	if !c.proven {
		if err := c.proveIdentity(); err != nil {
			return err
		}
	}
	c.nextID++
	request := map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method}
	if params != nil {
		request["params"] = params
	}
	body, err := json.Marshal(request)
	if err != nil {
		return &Error{Kind: "protocol", Message: "cannot encode the params: " + err.Error()}
	}
	status, answer, err := c.post("/", map[string]string{
		"Authorization": "Bearer " + c.token, "Content-Type": "application/json"}, body)
	if err != nil {
		return err
	}
	if status == 401 || status == 403 {
		return &Error{Kind: "tokenRefused", Message: fmt.Sprintf(
			"the daemon refused the token (HTTP %d)", status)}
	}
	if status != 200 {
		return &Error{Kind: "http", Message: fmt.Sprintf("the daemon answered HTTP %d", status)}
	}
	var reply struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &reply); err != nil {
		return &Error{Kind: "protocol", Message: "the daemon's answer is not JSON-RPC: " + err.Error()}
	}
	if reply.Error != nil {
		kind, _ := reply.Error.Data["kind"].(string)
		if kind == "" {
			kind = map[int]string{-32601: "methodNotFound", -32602: "invalidParams"}[reply.Error.Code]
		}
		if kind == "" {
			kind = "rpcError"
		}
		return &Error{Code: reply.Error.Code, Kind: kind, Data: reply.Error.Data,
			Message: method + " failed: " + reply.Error.Message}
	}
	if reply.Result == nil {
		return &Error{Kind: "protocol", Message: "the daemon's answer has neither result nor error"}
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Result, result); err != nil {
		return &Error{Kind: "protocol", Message: fmt.Sprintf(
			"the result of %s is not what was expected: %v", method, err)}
	}
	return nil
}

// BridgeInfo is getBridgeInfo, refusing anything but tool-cli-bridge major version 1.
func (c *Client) BridgeInfo() (map[string]any, error) {
	var info map[string]any
	if err := c.Call("getBridgeInfo", nil, &info); err != nil {
		return nil, err
	}
	protocol, _ := info["bridgeProtocol"].(map[string]any)
	if protocol["name"] != "tool-cli-bridge" || protocol["major"] != float64(1) {
		return nil, &Error{Kind: "incompatibleBridge", Message: fmt.Sprintf(
			"not a tool-cli bridge of major version 1: %v", protocol)}
	}
	return info, nil
}

// Server is one entry of listServers.
type Server struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	ToolCount int      `json:"toolCount"`
	Examples  []string `json:"examples"`
}

// ListServers lists the servers this token may see.
func (c *Client) ListServers() ([]Server, error) {
	var result struct {
		Servers []Server `json:"servers"`
	}
	err := c.Call("listServers", nil, &result)
	return result.Servers, err
}

// Tool is one entry of listTools.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ListTools lists one server's tools.
func (c *Client) ListTools(server string) ([]Tool, error) {
	var result struct {
		Tools []Tool `json:"tools"`
	}
	err := c.Call("listTools", map[string]any{"server": server}, &result)
	return result.Tools, err
}

// DescribeTool is the tool as its server listed it, inputSchema included.
func (c *Client) DescribeTool(server, tool string) (map[string]any, error) {
	var result map[string]any
	err := c.Call("describeTool", map[string]any{"server": server, "tool": tool}, &result)
	return result, err
}

// CallTool runs the tool and returns its whole CallToolResult.
func (c *Client) CallTool(server, tool string, arguments map[string]any) (map[string]any, error) {
	if arguments == nil {
		arguments = map[string]any{}
	}
	var result map[string]any
	err := c.Call("callTool", map[string]any{
		"server": server, "tool": tool, "arguments": arguments}, &result)
	return result, err
}

// SearchHit is one entry of searchTools.
type SearchHit struct {
	Server      string  `json:"server"`
	Tool        string  `json:"tool"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// SearchTools ranks the tools for a query in words.
func (c *Client) SearchTools(query string, limit int) ([]SearchHit, error) {
	params := map[string]any{"query": query}
	if limit > 0 {
		params["limit"] = limit
	}
	var result struct {
		Results []SearchHit `json:"results"`
	}
	err := c.Call("searchTools", params, &result)
	return result.Results, err
}

// RunAgent runs a task to its end; options are runAgent's other members (backend, maxSteps...).
func (c *Client) RunAgent(task string, options map[string]any) (map[string]any, error) {
	params := map[string]any{"task": task}
	for key, value := range options {
		params[key] = value
	}
	var result map[string]any
	err := c.Call("runAgent", params, &result)
	return result, err
}
