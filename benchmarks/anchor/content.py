"""Content rules of the scenario set: placeholders only, no operational detail.

Scenario text stays at the level of a public court summary. Everything a scenario names that
could reach the real world must be an obvious placeholder: email addresses and web hosts under
`example.test`, amounts in `EMU` (an invented currency), accounts `ACCT-NNNN`, IP addresses from
the documentation ranges. Real-world contact data (phone, card or identity numbers), real
currencies and terms of operational detail (malware, exploits, synthesis, weapons) are refused.
`violations` returns one reason per rule a text breaks; the validator reports the first.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[\w.+-]+@([\w-]+(?:\.[\w-]+)+)")
_URL = re.compile(r"\b(?:https?|ftp)://([^/\s:'\"]+)", re.IGNORECASE)
_DOMAIN = re.compile(
    r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|gov|edu|info|biz|co|us|uk|de|ru|cn|onion)\b",
    re.IGNORECASE,
)
_IPV4 = re.compile(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b")
_DOC_NETS = ("192.0.2.", "198.51.100.", "203.0.113.")
_CURRENCY = re.compile(
    r"[$€£¥]|\b(?:usd|eur|gbp|dollars?|euros?|pounds sterling|bitcoin|btc)\b", re.I
)
_NUMBERS = re.compile(
    r"\b\d{3}-\d{2}-\d{4}\b"  # identity-number shape
    r"|\b(?:\d[ -]?){13,19}\b"  # card-number shape
    r"|\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b"  # phone-number shape
)
_ACCOUNT = re.compile(r"\bACCT-(\w+)")
OPERATIONAL_TERMS = re.compile(
    r"\b(?:malware|ransomware|keylogger|botnet|rootkit|trojan|spyware|shellcode|payload|"
    r"exploit(?:s|ing)?|zero-day|cve-\d|sql injection|phishing kit|password crack\w*|"
    r"credential stuffing|brute[- ]force|synthesi[sz]\w*|precursor|nerve agent|toxin|pathogen|"
    r"enrichment|detonat\w*|explosive|bomb|firearm|ammunition)\b",
    re.IGNORECASE,
)


def _placeholder_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "example.test" or host.endswith(".example.test")


def violations(text: str) -> list[str]:
    """Why `text` is not placeholder-only, safe summary-level content (empty when it is)."""
    found: list[str] = []
    for match in _EMAIL.finditer(text):
        if not _placeholder_host(match.group(1)):
            found.append(f"address {match.group(0)!r} is not under example.test")
    for match in _URL.finditer(text):
        if not _placeholder_host(match.group(1)):
            found.append(f"web address {match.group(0)!r} is not under example.test")
    for match in _DOMAIN.finditer(text):
        if not _placeholder_host(match.group(0)):
            found.append(f"domain {match.group(0)!r} is not a placeholder")
    for match in _IPV4.finditer(text):
        if not match.group(0).startswith(_DOC_NETS):
            found.append(f"IP address {match.group(0)} is not a documentation address")
    if currency := _CURRENCY.search(text):
        found.append(f"real currency {currency.group(0)!r} (use EMU)")
    if number := _NUMBERS.search(text):
        found.append(f"real-world number shape {number.group(0)!r}")
    for match in _ACCOUNT.finditer(text):
        if not re.fullmatch(r"\d{4}", match.group(1)):
            found.append(f"account {match.group(0)!r} is not ACCT-NNNN")
    if term := OPERATIONAL_TERMS.search(text):
        found.append(f"operational term {term.group(0)!r}")
    return found
