/// AccessStore keeps what must survive a restart: credentials, settings changed at run
/// time, and the append-only event journal (SQLite, WAL). It is built with the daemon
/// (issue 4); until then this module holds only its namespace.
public enum AccessStore {}
