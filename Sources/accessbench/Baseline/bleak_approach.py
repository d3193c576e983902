#!/usr/bin/env python3
"""The baseline for `accessbench e2e`: the approach a user would otherwise script with bleak.

Scans, and on the first advertisement whose RSSI puts the reader within its advertised
autoConnectPathLoss (the same rule accessd applies, unsmoothed), connects, subscribes to
the control point and runs the access exchange of docs/reader-protocol.md: verify the
reader's challenge, sign the response, verify the decision. Prints one JSON line with
CLOCK_MONOTONIC timestamps.

    bleak_approach.py register --url INVITATION_URL --key-file FILE
    bleak_approach.py approach --key-file FILE --reader 00002A01 [--adapter hci1] [--timeout 60]

Needs bleak (PyPI) and cryptography (Debian's python3-cryptography will do).
"""
import argparse
import asyncio
import base64
import json
import sys
import time
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

SERVICE_DATA = "0000fff8-0000-1000-8000-00805f9b34fb"
CONTROL_POINT = "6a4e0002-5c8d-4b7a-9f3e-2d1c0b8a7f60"


def register(args):
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    body = json.dumps({"deviceName": "bleak-baseline", "credentialKey": base64.b64encode(public).decode()}).encode()
    request = urllib.request.Request(args.url.rstrip("/") + "/register", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=15))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with open(args.key_file, "w") as f:
        json.dump({"id": answer["credential"]["id"], "key": pem.decode(), "siteKey": answer["site"]["publicKey"],
                   "siteTag": answer["site"]["tag"]}, f)
    print(json.dumps({"registered": answer["credential"]["id"]}))


def fragments(message, mtu):
    capacity = max(mtu, 23) - 4
    out, offset, index = [], 0, 0
    while True:
        header = index & 0x3F
        chunk = bytearray()
        room = capacity
        if offset == 0:
            header |= 0x80
            chunk += len(message).to_bytes(2, "big")
            room -= 2
        end = min(len(message), offset + room)
        chunk += message[offset:end]
        offset = end
        if offset == len(message):
            header |= 0x40
        out.append(bytes([header]) + bytes(chunk))
        index += 1
        if offset >= len(message):
            return out


class Reassembler:
    def __init__(self):
        self.buffer, self.length = None, 0

    def feed(self, fragment):
        header = fragment[0]
        if header & 0x80:
            self.length = int.from_bytes(fragment[1:3], "big")
            self.buffer = bytearray(fragment[3:])
        else:
            self.buffer += fragment[1:]
        if header & 0x40:
            message, self.buffer = bytes(self.buffer), None
            return message
        return None


def sign(key, content):
    r, s = decode_dss_signature(key.sign(content, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def verify(public, signature, content):
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    public.verify(der, content, ec.ECDSA(hashes.SHA256()))


async def approach(args):
    with open(args.key_file) as f:
        stored = json.load(f)
    key = serialization.load_pem_private_key(stored["key"].encode(), password=None)
    site_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), base64.b64decode(stored["siteKey"]))
    credential = bytes.fromhex(stored["id"].replace("-", ""))
    wanted = bytes.fromhex(args.reader)
    t = {}
    found = asyncio.get_running_loop().create_future()

    def detected(device, advertisement):
        data = advertisement.service_data.get(SERVICE_DATA)
        if found.done() or not data or len(data) != 14 or data[3:7] != wanted:
            return
        tx, auto_path_loss = int.from_bytes(data[7:8], "big", signed=True), data[8]
        if tx - advertisement.rssi <= auto_path_loss:
            t["detected"] = time.monotonic()
            found.set_result(device)

    from bleak import BleakClient, BleakScanner
    scanner = BleakScanner(detected, adapter=args.adapter,
                           bluez={"filters": {"Transport": "le", "DuplicateData": True}})
    await scanner.start()
    print(json.dumps({"scanning": time.monotonic()}), flush=True)
    device = await asyncio.wait_for(found, args.timeout)
    await scanner.stop()
    t["scanStopped"] = time.monotonic()

    messages = asyncio.Queue()
    reassembler = Reassembler()

    def notified(_, data):
        message = reassembler.feed(bytes(data))
        if message is not None:
            messages.put_nowait(message)

    async with BleakClient(device, adapter=args.adapter) as client:
        t["connected"] = time.monotonic()
        await client.start_notify(CONTROL_POINT, notified)
        challenge = await asyncio.wait_for(messages.get(), 10)
        assert challenge[0] == 0x01, "not a challenge"
        reader_id, site_tag, nonce, signature = challenge[1:5], challenge[5:9], challenge[9:25], challenge[25:89]
        verify(site_key, signature, b"ACR1 challenge" + reader_id + site_tag + nonce)
        operation = bytes([1, 0])
        response = bytes([0x02]) + credential + operation + sign(
            key, b"ACR1 response" + nonce + reader_id + credential + operation)
        for fragment in fragments(response, client.mtu_size):
            await client.write_gatt_char(CONTROL_POINT, fragment, response=True)
        decision = await asyncio.wait_for(messages.get(), 10)
        assert decision[0] == 0x03, "not a decision"
        verify(site_key, decision[4:68], b"ACR1 decision" + nonce + reader_id + credential + decision[1:4])
        t["decided"] = time.monotonic()
        code = int.from_bytes(decision[1:2], "big", signed=True)
    print(json.dumps({"timestamps": t, "decision": code, "granted": 1 <= code <= 3}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser("register")
    r.add_argument("--url", required=True)
    r.add_argument("--key-file", required=True)
    a = commands.add_parser("approach")
    a.add_argument("--key-file", required=True)
    a.add_argument("--reader", required=True, help="reader id, 8 hex digits")
    a.add_argument("--adapter", default="hci1")
    a.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    if args.command == "register":
        register(args)
    else:
        asyncio.run(approach(args))


if __name__ == "__main__":
    sys.exit(main())
