// Command tool-cli-go uses a running tool-cli daemon from Go with the toolcli package
// (standard library only): it finds the daemon like tool-cli does, proves its identity before
// sending the token, runs SQL on the demo server, shows an error as a value with its kind,
// searches the tools and runs the offline agent. Every answer is checked and any wrong one exits
// non-zero, so CI (.ci/run) runs it against a live daemon on the bundled default config.
//
//	cd examples/go && go run .
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"example.com/tool-cli-go/toolcli"
)

func check(condition bool, format string, args ...any) {
	if !condition {
		fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	if err != nil {
		var toolErr *toolcli.Error
		if errors.As(err, &toolErr) {
			check(false, "%s: %s: %s", what, toolErr.Kind, toolErr.Message)
		}
		check(false, "%s: %v", what, err)
	}
}

func main() {
	client, err := toolcli.FromEnv(120 * time.Second)
	must(err, "find the daemon")
	info, err := client.BridgeInfo()
	must(err, "getBridgeInfo")
	implementation := info["serverImplementation"].(map[string]any)
	fmt.Printf("connected to %v %v at %s\n", implementation["name"], implementation["version"],
		client.Address())

	servers, err := client.ListServers()
	must(err, "listServers")
	demo := false
	for _, server := range servers {
		fmt.Printf("  %s: %d tools\n", server.Name, server.ToolCount)
		demo = demo || server.Name == "demo"
	}
	check(demo, "the demo server is listed: %v", servers)
	described, err := client.DescribeTool("demo", "sql_query")
	must(err, "describeTool")
	properties := described["inputSchema"].(map[string]any)["properties"].(map[string]any)
	_, takesSQL := properties["sql"]
	check(takesSQL, "sql_query takes sql: %v", properties)

	result, err := client.CallTool("demo", "sql_query", map[string]any{
		"sql":       "SELECT count(*) AS n FROM customers",
		"page_size": 5,
	})
	must(err, "callTool sql_query")
	check(result["isError"] != true, "sql_query succeeded: %v", result)
	rows := result["structuredContent"].(map[string]any)["rows"].([]any)
	check(len(rows) == 1, "one row: %v", rows)
	check(rows[0].(map[string]any)["n"] == float64(50), "50 customers: %v", rows)
	fmt.Printf("customers: %v\n", rows[0].(map[string]any)["n"])

	_, err = client.CallTool("demo", "sql_qurey", map[string]any{"sql": "SELECT 1"})
	var refused *toolcli.Error
	check(errors.As(err, &refused), "an unknown tool must fail, got %v", err)
	check(refused.Kind == "unknownTool", "kind unknownTool, got %q", refused.Kind)
	check(refused.Code == -32602, "code -32602, got %d", refused.Code)
	fmt.Printf("unknown tool refused as expected: %s: %s\n", refused.Kind, refused.Message)

	hits, err := client.SearchTools("run a SQL query on the shop database", 5)
	must(err, "searchTools")
	found := false
	for _, hit := range hits {
		found = found || (hit.Server == "demo" && hit.Tool == "sql_query")
	}
	check(found, "search finds demo/sql_query: %v", hits)

	run, err := client.RunAgent("Look up customer Ada Okafor's orders, sum their total, and "+
		"tell me if it exceeds $500", map[string]any{"backend": "offline"})
	must(err, "runAgent")
	check(run["status"] == "completed", "the agent completed: %v %v", run["status"], run["error"])
	facts := run["keyFacts"].(map[string]any)
	check(facts["customer_name"] == "Ada Okafor", "key facts: %v", facts)
	_, isBool := facts["exceeds_threshold"].(bool)
	check(isBool, "a yes/no answer: %v", facts)
	fmt.Printf("agent (%v): %v\n", run["backend"], run["answer"])

	// A token the daemon does not know is refused at the identity check, before it is sent
	// (over TCP; the check is the same on a Unix socket).
	if client.Port() > 0 {
		stranger := toolcli.New("127.0.0.1", client.Port(), "", fmt.Sprintf("%064x", 7),
			10*time.Second)
		_, err = stranger.ListServers()
		check(errors.As(err, &refused) && refused.Kind == "unknownToken",
			"an unknown token is refused at the identity check, got %v", err)
	}
	fmt.Println("go example: all checks passed")
}
