//! `dsh services`: every registered service and its provider.

use crate::app::App;
use crate::output::Output;
use serde_json::{json, Value};
use std::fmt::Write;

/// `[{service, provider, state}]`.
pub fn run(app: &App) -> Output {
    let services = app.ctx.services();
    let json = Value::Array(
        services
            .iter()
            .map(|s| json!({"service": s.service, "provider": s.provider, "state": s.state.as_str()}))
            .collect(),
    );
    let mut human = String::new();
    // The service names in one column as wide as the longest.
    let width = services.iter().map(|s| s.service.len()).max().unwrap_or(0);
    for s in &services {
        let _ = writeln!(
            human,
            "{:<width$} from {} ({})",
            s.service,
            s.provider.unwrap_or("<root>"),
            s.state.as_str()
        );
    }
    Output::ok(json, human)
}
