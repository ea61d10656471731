//! A `redis-server` of one test (Debian's package, installed by `tests/clients/setup.sh`) and
//! replicas of `airlock serve --http` sharing it. Without `/usr/bin/redis-server` a test says
//! so loudly and passes, unless `AIRLOCK_REQUIRE_CLIENTS=1` (as CI sets), where it fails.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::http::HttpServer;
use crate::support::stdio::{self, REPLY_TIMEOUT};

const REDIS_SERVER: &str = "/usr/bin/redis-server";

/// A `redis-server` of one test: loopback, a free port, a scratch directory, no persistence.
pub struct Redis {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    password: Option<String>,
}

impl Redis {
    /// A running Redis, or `None` after saying loudly why there is none (a failure under
    /// `AIRLOCK_REQUIRE_CLIENTS=1`).
    pub fn start(test: &str, password: Option<&str>) -> Option<Self> {
        if !Path::new(REDIS_SERVER).exists() {
            let reason = format!(
                "{REDIS_SERVER} is missing: run `bash tests/clients/setup.sh` (as root it \
                 installs Debian's redis-server)"
            );
            let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|v| v == "1");
            assert!(
                !required,
                "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
            );
            eprintln!("SKIPPED {test}: {reason}");
            return None;
        }
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let dir = std::env::temp_dir().join(format!(
            "airlock-it-redis-{test}-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = Self {
            child: None,
            port,
            dir,
            password: password.map(str::to_owned),
        };
        redis.restart();
        Some(redis)
    }

    /// The URL replicas are given (through the environment).
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Starts it (again) on its port, and waits until it answers.
    pub fn restart(&mut self) {
        let port = self.port.to_string();
        let dir = self.dir.to_str().unwrap().to_owned();
        let mut args = vec![
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &dir,
        ];
        if let Some(password) = &self.password {
            args.extend(["--requirepass", password]);
        }
        let child = stdio::spawn_command(Path::new(REDIS_SERVER))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
                stream.write_all(b"PING\r\n").unwrap();
                let mut answer = [0_u8; 16];
                let read = stream.read(&mut answer).unwrap_or(0);
                if answer[..read].starts_with(b"+PONG") || answer[..read].starts_with(b"-NOAUTH") {
                    return;
                }
            }
            assert!(
                started.elapsed() < REPLY_TIMEOUT,
                "redis-server never answered"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it (no shutdown: as a crash or a network cut looks to the replicas).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _killed = child.kill();
            let _reaped = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// Replicas of one deployment: `airlock serve --http` with `args`, all on `redis`.
pub fn replicas(
    count: usize,
    redis: &Redis,
    args: &[&str],
    env: &[(&str, &str)],
) -> Vec<HttpServer> {
    let url = redis.url();
    let mut env = env.to_vec();
    env.push(("AIRLOCK_REDIS_URL", &url));
    let mut all = vec!["--quota-store", "redis"];
    all.extend_from_slice(args);
    (0..count)
        .map(|_| HttpServer::airlock(&all, &env))
        .collect()
}
