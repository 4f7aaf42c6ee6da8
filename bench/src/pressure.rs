//! How busy the machine was while figures were taken: the CPU pressure a run reports at its
//! start and its end, so a reader can tell a quiet run from a loaded one.
//!
//! Linux gives two readings: the pressure stall information of `/proc/pressure/cpu` (the
//! share of the last 10 seconds in which some runnable task waited for a CPU, in percent)
//! and the 1-minute load average of `/proc/loadavg` (runnable tasks, to compare with the
//! CPU count). Elsewhere, or where the kernel does not expose them, a reading is `None`.

use serde_json::{Map, Value};
use std::fmt::Write as _;

/// One reading of the machine's CPU pressure.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuPressure {
    /// `some avg10` of `/proc/pressure/cpu`: percent of the last 10 s in which a runnable
    /// task waited for a CPU (0 on a quiet machine, near 100 on a saturated one).
    pub some_avg10_pct: Option<f64>,
    /// The 1-minute load average (runnable and uninterruptible tasks).
    pub load_1m: Option<f64>,
    /// The CPUs this process may run on.
    pub cpus: usize,
}

impl CpuPressure {
    /// Reads the pressure now.
    pub fn sample() -> CpuPressure {
        CpuPressure {
            some_avg10_pct: std::fs::read_to_string("/proc/pressure/cpu")
                .ok()
                .and_then(|text| some_avg10(&text)),
            load_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|text| text.split_whitespace().next()?.parse().ok()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The `some avg10=` figure of a `/proc/pressure/cpu` text.
fn some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|line| line.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// The pressure at the start and at the end of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunPressure {
    /// Read before the first figure.
    pub start: CpuPressure,
    /// Read after the last figure.
    pub end: CpuPressure,
}

impl RunPressure {
    /// Adds `cpu_pressure_start_pct`, `cpu_pressure_end_pct`, `load_1m_start`, `load_1m_end`
    /// (null where unreadable) and `cpus` to `line`, a `--json` object.
    ///
    /// # Panics
    /// When `line` is not a JSON object.
    pub fn add_to(&self, line: &mut Value) {
        let map: &mut Map<String, Value> = line.as_object_mut().expect("a JSON object");
        map.insert(
            "cpu_pressure_start_pct".into(),
            self.start.some_avg10_pct.into(),
        );
        map.insert(
            "cpu_pressure_end_pct".into(),
            self.end.some_avg10_pct.into(),
        );
        map.insert("load_1m_start".into(), self.start.load_1m.into());
        map.insert("load_1m_end".into(), self.end.load_1m.into());
        map.insert("cpus".into(), self.end.cpus.into());
    }

    /// One line for a person: `CPU pressure 0.0% at the start, 12.5% at the end (load
    /// 0.2 -> 1.9 on 2 CPUs)`.
    pub fn to_human(&self) -> String {
        let pct = |x: Option<f64>| x.map_or("unknown".to_owned(), |x| format!("{x:.1}%"));
        let load = |x: Option<f64>| x.map_or("unknown".to_owned(), |x| format!("{x:.2}"));
        let mut out = String::new();
        let _ = write!(
            out,
            "CPU pressure {} at the start, {} at the end (load {} -> {} on {} CPUs)",
            pct(self.start.some_avg10_pct),
            pct(self.end.some_avg10_pct),
            load(self.start.load_1m),
            load(self.end.load_1m),
            self.end.cpus
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_some_line_gives_the_ten_second_average() {
        let text = "some avg10=12.50 avg60=3.00 avg300=1.00 total=17\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(some_avg10(text), Some(12.5));
        assert_eq!(some_avg10("full avg10=1.00\n"), None);
    }

    #[test]
    fn a_run_adds_its_pressure_to_the_json_line_and_null_where_unknown() {
        let run = RunPressure {
            start: CpuPressure {
                some_avg10_pct: Some(0.5),
                load_1m: None,
                cpus: 2,
            },
            end: CpuPressure {
                some_avg10_pct: Some(40.0),
                load_1m: Some(1.5),
                cpus: 2,
            },
        };
        let mut line = serde_json::json!({"get_ns": 1.0});
        run.add_to(&mut line);
        assert_eq!(line["cpu_pressure_start_pct"], 0.5);
        assert_eq!(line["cpu_pressure_end_pct"], 40.0);
        assert_eq!(line["load_1m_start"], Value::Null);
        assert_eq!(line["cpus"], 2);
        assert_eq!(
            run.to_human(),
            "CPU pressure 0.5% at the start, 40.0% at the end (load unknown -> 1.50 on 2 CPUs)"
        );
    }
}
