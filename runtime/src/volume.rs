//! `husk do --volume HOST:GUEST[:ro|:rw]`: a host directory the guest
//! works in, served by a gofer of its own that is confined to it (as a
//! container's bind mounts are), so results land on the host while every
//! other write stays in the sandbox's overlay.

use anyhow::{bail, Context as _};
use std::path::{Path, PathBuf};

/// One volume, checked.
#[derive(Debug, PartialEq, Eq)]
pub struct Volume {
    /// The host directory, canonical.
    pub host: PathBuf,
    /// Where the guest sees it: an absolute path other than `/`.
    pub guest: PathBuf,
    pub read_only: bool,
}

/// Parses and checks `--volume` arguments: HOST must be an existing
/// directory, GUEST an absolute path other than the root.
pub fn parse(arg: &str) -> anyhow::Result<Volume> {
    let parts: Vec<&str> = arg.split(':').collect();
    let (host, guest, read_only) = match parts[..] {
        [h, g] => (h, g, false),
        [h, g, "rw"] => (h, g, false),
        [h, g, "ro"] => (h, g, true),
        [_, _, mode] => bail!("--volume {arg}: unknown mode {mode:?} (ro or rw)"),
        _ => bail!("--volume {arg}: want HOST:GUEST[:ro|:rw]"),
    };
    if host.is_empty() {
        bail!("--volume {arg}: no host directory");
    }
    let guest_path = Path::new(guest);
    if !guest_path.is_absolute() {
        bail!("--volume {arg}: the guest path {guest:?} is not absolute");
    }
    if guest_path.components().any(|c| c == std::path::Component::ParentDir) || guest_path == Path::new("/") {
        bail!("--volume {arg}: the guest path {guest:?} must name a directory below /, without ..");
    }
    let host = Path::new(host);
    if !host.is_dir() {
        bail!("--volume {arg}: {} is not a directory", host.display());
    }
    let host = host.canonicalize().with_context(|| format!("--volume {arg}: {}", host.display()))?;
    Ok(Volume { host, guest: guest_path.to_path_buf(), read_only })
}

/// Where the guest sees host directory `dir`: below the volume whose host
/// directory holds it most closely, else below the root filesystem
/// `rootfs`; none when the sandbox does not show it.
pub fn guest_path(dir: &Path, rootfs: &Path, volumes: &[Volume]) -> Option<PathBuf> {
    let in_volume = volumes
        .iter()
        .filter_map(|v| Some((v.host.components().count(), v.guest.join(dir.strip_prefix(&v.host).ok()?))))
        .max_by_key(|(depth, _)| *depth)
        .map(|(_, p)| p);
    in_volume.or_else(|| Some(Path::new("/").join(dir.strip_prefix(rootfs).ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_are_checked() {
        let tmp = std::env::temp_dir().canonicalize().unwrap();
        let t = tmp.to_str().unwrap();
        assert_eq!(
            parse(&format!("{t}:/ws")).unwrap(),
            Volume { host: tmp.clone(), guest: "/ws".into(), read_only: false }
        );
        assert!(parse(&format!("{t}:/ws:ro")).unwrap().read_only);
        assert!(!parse(&format!("{t}:/ws:rw")).unwrap().read_only);
        for bad in [
            format!("{t}:ws"),
            format!("{t}:/"),
            format!("{t}:/a/../b"),
            format!("{t}:/ws:rx"),
            t.to_string(),
            format!("{t}:/a:ro:x"),
            ":/ws".to_string(),
            "/no/such/dir/anywhere:/ws".to_string(),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_closest_volume_shows_a_directory() {
        let v = |h: &str, g: &str| Volume { host: h.into(), guest: g.into(), read_only: false };
        let vols = [v("/home/me/src", "/ws"), v("/home/me/src/sub", "/sub")];
        let root = Path::new("/");
        assert_eq!(guest_path(Path::new("/home/me/src/a"), root, &vols), Some("/ws/a".into()));
        assert_eq!(guest_path(Path::new("/home/me/src/sub/b"), root, &vols), Some("/sub/b".into()));
        assert_eq!(guest_path(Path::new("/home/me"), root, &vols), Some("/home/me".into()));
        assert_eq!(guest_path(Path::new("/elsewhere"), Path::new("/img"), &vols), None);
        assert_eq!(guest_path(Path::new("/img/usr"), Path::new("/img"), &vols), Some("/usr".into()));
    }
}
