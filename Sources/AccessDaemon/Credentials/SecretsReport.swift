import AccessStore
import Logging

/// What accessd says at start about its secrets at rest (docs/operations.md, "Secrets at
/// rest"): never silently weaker than the unit promises.
public enum SecretsReport {
    public static func log(_ secrets: SecretsAtRest, logger: Logger) {
        var metadata: Logger.Metadata = ["protection": "\(secrets.protection)"]
        if let origin = secrets.keyOrigin { metadata["key"] = "\(origin)" }
        if secrets.migrated > 0 {
            logger.notice(
                "sealed the secrets of a database from before sealing: the plaintext is gone from its files",
                metadata: metadata.merging(["secrets": "\(secrets.migrated)"]) { $1 })
        }
        if let problem = secrets.problem {
            logger.error("secrets at rest: \(problem)", metadata: metadata)
            return
        }
        switch secrets.protection {
        case "tpm2", "host": logger.info("secrets sealed with a data key sealed to this machine", metadata: metadata)
        default:
            logger.warning(
                "secrets sealed with a key file, not sealed to this machine: run under the unit for the systemd credential",
                metadata: metadata)
        }
    }
}
