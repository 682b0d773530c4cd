//! nginx as a peer of the HTTP tests: started on a free port of 127.0.0.1 with a config in a
//! tempdir, its access log read back, stopped with its workers on drop.

use crate::util::*;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// nginx on 127.0.0.1:PORT serving a 512 KiB file, logging each request's status and bytes.
/// It runs in the foreground (`daemon off;`) as the leader of its own process group, which its
/// workers join; dropping it stops the whole group and waits for it.
pub struct Nginx {
    child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl Nginx {
    /// `None`, after saying why, where nginx is not installed.
    pub fn start() -> Option<Nginx> {
        Nginx::start_with("$status $bytes_sent $body_bytes_sent", |_, _| {
            (String::new(), String::new())
        })
    }

    /// The same nginx with `log_format` for its access log, and `site(dir, port)`'s words added
    /// to its `listen` directive and to its server block (an https site's certificate, say).
    pub fn start_with(log_format: &str, site: impl FnOnce(&Path, u16) -> (String, String)) -> Option<Nginx> {
        if !can_run(&[Need::Program {
            name: "nginx",
            package: "nginx-light",
        }]) {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("www");
        std::fs::create_dir(&root).expect("www");
        let body: Vec<u8> = (0..512 * 1024).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("512k.bin"), &body).expect("file");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let d = dir.path().display();
        let (listen, server) = site(dir.path(), port);
        let conf = format!(
            "user root;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\ndaemon off;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  log_format counts '{log_format}';\n  access_log {d}/access.log counts;\n\
               sendfile on;\n  keepalive_requests 1000000;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n  fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n\
               server {{ listen 127.0.0.1:{port}{listen}; root {}; {server} }}\n}}\n",
            root.display()
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("conf");
        let child = Command::new("nginx")
            .args(["-p", &d.to_string(), "-c"])
            .arg(&conf_path)
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx (Debian: apt-get install nginx-light)");
        let n = Nginx { child, dir, port };
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "nginx did not start: {:?}",
                std::fs::read_to_string(n.dir.path().join("error.log"))
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(n)
    }

    /// The process group of the master and its workers.
    pub fn group(&self) -> i32 {
        self.child.id() as i32
    }

    /// (requests logged with status 200, their bytes sent in all, their body bytes).
    pub fn log(&self) -> (u64, u64, u64) {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        let mut out = (0, 0, 0);
        for line in text.lines() {
            let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if let [200, sent, body] = f[..] {
                out.0 += 1;
                out.1 += sent;
                out.2 += body;
            }
        }
        out
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown: the master stops its workers, waits for them and
        // exits. A killed master would leave its workers running.
        // SAFETY: kill(2) on the process group this test made for nginx.
        unsafe { libc::kill(-self.group(), libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever is left of the group, master or workers, after that.
        // SAFETY: as above.
        unsafe { libc::kill(-self.group(), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}
