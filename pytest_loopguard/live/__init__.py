"""What a live agent embeds beside the Guard: Session, the recorder, framework adapters and redaction."""
