/// Whether an adapter can do accessd's job, judged from what bluetoothd says of it before it
/// is used (issue #38, part 3): accessd is an LE central (it scans for readers' advertisements
/// and connects to them), and needs nothing else from the adapter or from `bluetoothd -E`
/// (advertising intervals are readersim's). An unfit adapter is reported with the SDK's
/// `errorDeviceNotSupported` and the reason, and not tried.
public enum AdapterFitness {
    /// Why the adapter cannot be used, or nil when it can. `roles` is `Adapter1.Roles`
    /// (BlueZ ≥ 5.48): the LE roles the controller supports, empty for a BR/EDR-only one;
    /// nil when bluetoothd does not say (an older BlueZ), which is given the benefit of the
    /// doubt: scanning then fails with BlueZ's own error if it has no LE.
    public static func problem(roles: [String]?) -> String? {
        guard let roles else { return nil }
        if roles.contains("central") || roles.contains("central-peripheral") { return nil }
        if roles.isEmpty { return "no Bluetooth LE (a BR/EDR-only controller): it cannot hear readers" }
        return "no LE central role (it offers \(roles.joined(separator: ", "))): it cannot scan for readers"
    }
}
