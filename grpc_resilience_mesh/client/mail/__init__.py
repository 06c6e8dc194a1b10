"""The SMTP sink `mesh up` starts for the receipts, and its mailbox files."""
