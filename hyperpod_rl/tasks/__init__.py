"""Task plug-ins (placeholder until the task protocol lands; see ``hyperpod_rl.tasks.doc_read``)."""
