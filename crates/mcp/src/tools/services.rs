//! The services folded into existing tools: list_jobs `{"services": true}` lists the project's
//! Procfile and .claude/launch.json services beside their jobs; execute_command
//! `{"service": "web"}` starts (ensures) one and waits for its port.

use std::path::PathBuf;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::budget;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

impl Server {
    /// list_jobs with `services: true`.
    pub(crate) async fn list_services(&self, p: ListParams) -> Result<ListResult, ToolError> {
        if p.status.is_some() || p.cursor.is_some() {
            return Err(ToolError::invalid(
                "status and cursor choose jobs; with services: true leave them out",
            ));
        }
        let services = self.jobs().services_async(p.cwd.map(PathBuf::from)).await?;
        let total = services.len();
        let page = budget::page(
            services.into_iter().map(ServiceSummary::from),
            budget::requested(p.max_bytes),
        );
        let omitted = total - page.len();
        Ok(ListResult {
            jobs: Vec::new(),
            total_jobs: 0,
            omitted_jobs: 0,
            next_cursor: None,
            services: Some(page),
            omitted_services: (omitted > 0).then_some(omitted as u64),
        })
    }

    /// execute_command with `service`: an ensure of the service's definition, then a wait for
    /// its port (capped like wait_for_job) when it has one.
    pub(crate) async fn start_service(
        &self,
        p: ExecuteParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ExecuteResult, ToolError> {
        let name = p.service.unwrap_or_default();
        let given = [
            ("command", p.command.is_some()),
            ("name", p.name.is_some()),
            ("env", p.env.is_some()),
            ("cols", p.cols.is_some()),
            ("rows", p.rows.is_some()),
            ("timeout_secs", p.timeout_secs.is_some()),
            ("wait", p.wait.is_some()),
            // A kept service: `ptyjobs services --start`, or command + name + ensure + keep.
            ("keep", p.keep.is_some()),
            ("keep_ttl_secs", p.keep_ttl_secs.is_some()),
        ];
        if let Some((param, _)) = given.iter().find(|(_, set)| *set) {
            return Err(ToolError::invalid(format!(
                "service {name:?} runs as its Procfile or .claude/launch.json defines it: \
                 leave out {param} (give only service and cwd, the project directory)"
            )));
        }
        let start = self.jobs().start_service(
            &name,
            p.cwd.map(PathBuf::from),
            None,
            super::progress(context),
        );
        let started = tokio::select! {
            s = start => s?,
            () = context.ct.cancelled() => {
                return Err(ToolError::invalid("cancelled; a job it started runs on"));
            }
        };
        // The job appeared (or an old one was forgotten): tell the client.
        if !started.started.reused {
            self.resource_list_changed(&context.peer);
        }
        let service = ServiceStarted::from(&started);
        let mut result = ExecuteResult::from(started.started.info);
        if let Some(ready) = started.ready {
            result = result.with_outcome(ready.into());
        }
        result.service = Some(service);
        Ok(result)
    }
}
