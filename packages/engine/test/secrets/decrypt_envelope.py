"""Decrypts a `kiln secret envelope --json` document with the KEK alone (ADR 0025), using only the
`cryptography` package's AESGCM: the third-party check that the documented format is the real one.

usage: decrypt_envelope.py KEK_FILE < envelope.json   -> the plaintext on stdout; exit 1 if it does not open
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def main() -> int:
    kek = base64.b64decode(open(sys.argv[1], encoding="ascii").read().strip())
    env = json.load(sys.stdin)
    wrapped = base64.b64decode(env["wrapped_dek"])
    sealed = base64.b64decode(env["ciphertext"])
    try:
        dek = AESGCM(kek).decrypt(wrapped[:12], wrapped[12:], env["dek_aad"].encode())
        value = AESGCM(dek).decrypt(sealed[:12], sealed[12:], env["aad"].encode())
    except InvalidTag:
        print("does not open", file=sys.stderr)
        return 1
    sys.stdout.write(value.decode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
