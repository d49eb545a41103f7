//! A kernel memory monitor that slows launches of thousands of nodes: DAMON's `kdamond`
//! threads, which some kernels run for proactive reclaim (this machine does). Each of its checks
//! of whether a page was accessed walks every mapping of the page, and a launch's nodes share
//! their code and the pages of the zygote they were forked from, so with thousands of nodes the
//! monitor takes most of a core (`perf`: `kdamond` in `rmap_walk_anon`) and a launch of 16,384
//! takes several times as long (docs/cost.md, "A kernel monitor", has the runs). The launcher
//! cannot change the kernel's setting (nor should it: it is the machine's), so it says so once,
//! where a user would otherwise wonder why.

use std::path::Path;

/// From how many nodes the monitor was measured to slow a launch.
const FROM: usize = 8192;

/// The names of the running `kdamond` threads (`kdamond.0`, ...), found in `proc` by their
/// names, which any user may read (their settings under /sys are root's only).
fn running(proc: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|comm| comm.trim_end().to_string())
        .filter(|comm| comm.starts_with("kdamond"))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// What to tell the user before a launch of `n` nodes, if a monitor is running: the file that
/// stops each running `kdamond.N` (one per monitor, so with several the note names each).
fn note_for(n: usize, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let files: Vec<String> = names
        .iter()
        .map(|name| {
            let index = name.strip_prefix("kdamond.").unwrap_or("0");
            format!("/sys/kernel/mm/damon/admin/kdamonds/{index}/state")
        })
        .collect();
    Some(format!(
        "coordlab: the kernel's DAMON memory monitor is running ({}): with {n} nodes sharing their \
         pages, its page checks can take most of a core and make this launch several times slower \
         (docs/cost.md, \"A kernel monitor\"); as root, `off` written to {} stops it, `on` starts \
         it again",
        names.join(", "),
        files.join(" and ")
    ))
}

/// The note for a launch of `n` nodes on this machine, if any (only large launches look).
pub(crate) fn note(n: usize) -> Option<String> {
    match n >= FROM {
        true => note_for(n, &running(Path::new("/proc"))),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_kdamond_is_found_by_its_name_and_named_in_the_note() {
        let dir = std::env::temp_dir().join(format!("coordlab-kdamond-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (pid, comm) in [("77", "kdamond.0\n"), ("1", "init\n"), ("400", "coordlab\n")] {
            std::fs::create_dir_all(dir.join(pid)).unwrap();
            std::fs::write(dir.join(pid).join("comm"), comm).unwrap();
        }
        // Not a process: ignored even with a matching file inside.
        std::fs::create_dir_all(dir.join("self-like")).unwrap();
        std::fs::write(dir.join("self-like").join("comm"), "kdamond.9\n").unwrap();
        let names = running(&dir);
        assert_eq!(names, vec!["kdamond.0".to_string()]);
        let note = note_for(16384, &names).unwrap();
        assert!(note.contains("(kdamond.0)") && note.contains("16384 nodes"), "{note}");
        assert!(note.contains("/sys/kernel/mm/damon/admin/kdamonds/0/state"), "{note}");
        assert_eq!(note_for(16384, &[]), None);
        // Two monitors: each one's file is named.
        let two = note_for(8192, &["kdamond.0".to_string(), "kdamond.1".to_string()]).unwrap();
        assert!(
            two.contains("kdamonds/0/state and /sys/kernel/mm/damon/admin/kdamonds/1/state"),
            "{two}"
        );
        assert_eq!(running(&dir.join("absent")), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn small_launches_do_not_look() {
        assert_eq!(note(FROM - 1), None);
    }
}
