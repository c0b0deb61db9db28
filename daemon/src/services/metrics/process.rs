//! The process basics of the `/metrics` page, read from Linux's `/proc/self`; elsewhere, or when
//! a file cannot be read, a figure is absent rather than wrong.

/// What `/proc/self` says about us.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcessSample {
    pub(crate) cpu_seconds: Option<f64>,
    pub(crate) resident_memory_bytes: Option<u64>,
    pub(crate) virtual_memory_bytes: Option<u64>,
    pub(crate) open_fds: Option<u64>,
    pub(crate) threads: Option<u64>,
    pub(crate) start_time_seconds: Option<f64>,
}

/// Reads the sample now.
pub(crate) fn sample() -> ProcessSample {
    // SAFETY: sysconf only reads configuration values.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| boot_time(&text));
    let mut sample = stat
        .as_deref()
        .and_then(|stat| {
            parse_stat(
                stat,
                ticks_per_second.max(1) as f64,
                page_size.max(1) as u64,
                boot_time,
            )
        })
        .unwrap_or_default();
    sample.open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|entries| entries.count() as u64);
    sample
}

/// The `btime` line of `/proc/stat`: when the machine booted, in seconds since the epoch.
fn boot_time(proc_stat: &str) -> Option<f64> {
    proc_stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// Parses `/proc/self/stat` (see proc(5)); the command name in parentheses may hold spaces, so
/// fields are counted from the last `)`.
fn parse_stat(
    stat: &str,
    ticks_per_second: f64,
    page_size: u64,
    boot_time: Option<f64>,
) -> Option<ProcessSample> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is index 0, so field N is index N - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let cpu_ticks = field(14)? + field(15)?;
    Some(ProcessSample {
        cpu_seconds: Some(cpu_ticks as f64 / ticks_per_second),
        threads: field(20),
        start_time_seconds: boot_time
            .zip(field(22))
            .map(|(boot, start)| boot + start as f64 / ticks_per_second),
        virtual_memory_bytes: field(23),
        resident_memory_bytes: field(24).map(|pages| pages * page_size),
        open_fds: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (tool cli (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 \
                    7 0 1000 123456789 300 18446744073709551615";
        let sample = parse_stat(stat, 100.0, 4096, Some(1_700_000_000.0)).unwrap();
        assert_eq!(sample.cpu_seconds, Some(3.0));
        assert_eq!(sample.threads, Some(7));
        assert_eq!(sample.start_time_seconds, Some(1_700_000_010.0));
        assert_eq!(sample.virtual_memory_bytes, Some(123_456_789));
        assert_eq!(sample.resident_memory_bytes, Some(300 * 4096));
        assert_eq!(parse_stat("garbage", 100.0, 4096, None), None);
        assert_eq!(
            boot_time("cpu 1 2\nbtime 1700000000\n"),
            Some(1_700_000_000.0)
        );
    }

    #[test]
    fn our_own_process_is_readable() {
        let sample = sample();
        assert!(sample.resident_memory_bytes.unwrap() > 0);
        assert!(sample.open_fds.unwrap() >= 3);
        assert!(sample.threads.unwrap() >= 1);
    }
}
