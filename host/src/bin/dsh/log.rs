//! What `dsh` writes to stderr besides its output: warnings in plain words by default, full
//! `tracing` logs when asked (`--verbose`, or a `DSH_LOG` filter such as `debug`).

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Installs the logger. Verbose (`--verbose`, or `DSH_LOG` set): `tracing`'s full format with
/// times and targets, filtered by `DSH_LOG` (default `debug` with `--verbose`). Otherwise each
/// warning is one line, `warning: WHAT key=value`, and the lifecycle warnings of dsh-core and
/// the ACP SDK's warning for each error it answers (the client has the answer) are left out: a plugin that failed is reported once, by the error that names it or by the
/// command's closing warnings ([`failed_plugins`]).
pub fn init(verbose: bool) {
    use std::io::IsTerminal;
    let ansi = std::io::stderr().is_terminal();
    let configured = EnvFilter::try_from_env("DSH_LOG").ok();
    if verbose || configured.is_some() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
            .with_env_filter(configured.unwrap_or_else(|| EnvFilter::new("debug")))
            .init();
    } else {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_env_filter(EnvFilter::new(
                "warn,dsh_core=error,agent_client_protocol=error",
            ))
            .event_format(Plain)
            .init();
    }
}

/// Whether the causes behind an error are shown: `--verbose`, or a `DSH_LOG` filter that
/// enables debug logs of dsh.
pub fn show_causes(verbose: bool) -> bool {
    verbose
        || EnvFilter::try_from_env("DSH_LOG")
            .ok()
            .and_then(|filter| filter.max_level_hint())
            .is_some_and(|level| level >= tracing::level_filters::LevelFilter::DEBUG)
}

/// One line per event: `warning: ` or `error: ` and the message with its fields.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = *event.metadata().level();
        let prefix = match level {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        write!(writer, "{prefix}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// A warning line for each plugin of `ctx` that failed, naming it and why: what a command
/// that succeeded still reports (the plugin's own log lines are left out, see [`init`]).
pub fn failed_plugins(ctx: &dsh::Context) -> Vec<String> {
    ctx.plugins()
        .into_iter()
        .filter_map(|info| {
            let error = info.error?;
            Some(format!(
                "warning: plugin {} failed [{}]: {}",
                info.name,
                error.code(),
                error.message()
            ))
        })
        .collect()
}
