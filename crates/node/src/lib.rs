//! # ptyjobs-node
//!
//! The Node.js face of ptyjobs: the engine's [`ptyjobs_engine::JobManager`] as a native addon
//! (napi-rs). A thin adapter: options in, engine call, plain objects out. The JS surface and
//! its contracts are documented on [`manager::JobManager`] and carried into `index.d.ts`.
//!
//! ```js
//! const { JobManager } = require('ptyjobs')
//! const jobs = new JobManager()
//! const { jobId } = jobs.execute('printf "\\033[31mred\\033[0m\\n"; exit 3')
//! const info = await jobs.wait(jobId)          // { status: 'failed', exitCode: 3, ... }
//! jobs.output(jobId).output                    // 'red'
//!
//! const dev = jobs.execute('npm run dev').jobId
//! await jobs.wait(dev, { port: 3000 })          // { reason: 'port_open', info, tail, ... }
//! jobs.screen(dev).rows                         // what the terminal shows now
//! await jobs.sendKeys(dev, ['C-c'])
//! await jobs.close()
//! ```

mod error;
mod manager;
mod numbers;
mod options;
mod policy;
mod ports;
mod stream;
mod types;
