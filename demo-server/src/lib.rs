//! The bundled demo MCP server (placeholder until implemented).

/// Serves MCP over stdin/stdout until stdin closes.
pub async fn run_stdio(_db_path: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    anyhow::bail!("demo server not implemented yet")
}
