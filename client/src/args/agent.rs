//! `tool-cli agent "TASK" [--backend B] [--model M] [--max-steps N] [--max-cost USD]`: the
//! grammar of an agent run, checked without a daemon (`--dry-run`, `--session` and `--json` are
//! the global flags).

use clap::Args;

use crate::error::Error;

/// Most steps a run may take (the daemon's limit too).
const MAX_STEPS: u32 = 50;

/// `tool-cli agent ...`.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The task, in plain language (quote it)
    #[arg(value_name = "TASK")]
    task: String,

    /// The LLM backend: offline (rules, no network), anthropic or openai [default: the
    /// daemon's config, else offline]
    #[arg(long, value_name = "B")]
    backend: Option<String>,

    /// The model [default: the daemon's config, else the backend's]
    #[arg(long, value_name = "M")]
    model: Option<String>,

    /// At most N LLM calls, 1 to 50 [default: the daemon's config, else 8]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    max_steps: Option<String>,

    /// Halt before an LLM call that could take the run's cost past USD dollars [default: the
    /// daemon's config, else 0.10]
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    max_cost: Option<String>,
}

/// A checked agent run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentCommand {
    /// The task.
    pub(crate) task: String,
    /// `--backend`.
    pub(crate) backend: Option<String>,
    /// `--model`.
    pub(crate) model: Option<String>,
    /// `--max-steps`.
    pub(crate) max_steps: Option<u32>,
    /// `--max-cost`, in US dollars.
    pub(crate) max_cost_usd: Option<f64>,
}

/// Checks the arguments: a task with words in it, a step count in range, a positive cost.
pub(crate) fn command(args: AgentArgs) -> Result<AgentCommand, Error> {
    if args.task.trim().is_empty() {
        return Err(Error::Usage(
            "the task is empty; say what the agent should do, e.g. `tool-cli agent \"Read \
             notes.txt and tell me how many lines it has\"`"
                .to_owned(),
        ));
    }
    let max_steps = match args.max_steps.as_deref().map(str::trim) {
        None => None,
        Some(text) => match text.parse::<u32>() {
            Ok(steps) if (1..=MAX_STEPS).contains(&steps) => Some(steps),
            _ => {
                return Err(Error::Usage(format!(
                    "--max-steps must be a whole number from 1 to {MAX_STEPS}, got {text:?}"
                )));
            }
        },
    };
    let max_cost_usd = match args.max_cost.as_deref().map(str::trim) {
        None => None,
        Some(text) => {
            let cost = text.trim_start_matches('$').parse::<f64>();
            match cost {
                Ok(cost) if cost.is_finite() && cost > 0.0 => Some(cost),
                _ => {
                    return Err(Error::Usage(format!(
                        "--max-cost must be a positive number of US dollars such as 0.25, got \
                         {text:?}"
                    )));
                }
            }
        }
    };
    let non_blank = |value: Option<String>, flag: &str| match value {
        Some(text) if text.trim().is_empty() => Err(Error::Usage(format!(
            "{flag} is empty; give a name or leave {flag} out for the daemon's default"
        ))),
        other => Ok(other),
    };
    Ok(AgentCommand {
        task: args.task,
        backend: non_blank(args.backend, "--backend")?,
        model: non_blank(args.model, "--model")?,
        max_steps,
        max_cost_usd,
    })
}
