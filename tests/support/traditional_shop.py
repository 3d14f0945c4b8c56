"""A tiny shop written in traditional characters (#43): three FAQ entries, one product page and its SKUs."""

from __future__ import annotations

import json
from pathlib import Path

FAQ = [
    {
        "doc_id": "tw-faq-1",
        "title": "退貨運費由誰負擔？",
        "doc_type": "faq",
        "authority": "official",
        "text": "商品有瑕疵時，退貨運費由本店負擔；個人因素退貨的運費由顧客自付，約新台幣 80 元。",
    },
    {
        "doc_id": "tw-faq-2",
        "title": "多久可以收到包裹？",
        "doc_type": "faq",
        "authority": "official",
        "text": "台灣本島下單後 2 個工作天內送達，離島約需 5 個工作天。",
    },
    {
        "doc_id": "tw-faq-3",
        "title": "可以開立統一編號發票嗎？",
        "doc_type": "faq",
        "authority": "official",
        "text": "可以，結帳時請在備註欄填寫統一編號與公司抬頭，發票會隨貨寄出。",
    },
]
PRODUCT = """---
doc_id: tw-prod-kettle
title: 溫控電熱水壺 K2
doc_type: product
product_id: tw-kettle-k2
authority: official
---
## 商品簡介
溫控電熱水壺 K2 容量 1.2 公升，可設定 40 至 100 度共六段溫度，保溫最長 4 小時。
## 保固
整機保固兩年，加熱盤保固三年。
"""

SKUS = """product_id,sku,name,brand,category,colour,size,price,stock,updated_at
tw-kettle-k2,K2-BLK,溫控電熱水壺 K2,茗器,廚房家電,霧面黑,1.2L,1680.00,6,2026-05-01
tw-kettle-k2,K2-WHT,溫控電熱水壺 K2,茗器,廚房家電,珍珠白,1.2L,1580.00,0,2026-05-01
"""


def write_traditional_shop(folder: Path) -> Path:
    """The shop's files in `folder` (created), which is returned for ingesting."""
    (folder / "products").mkdir(parents=True, exist_ok=True)
    (folder / "faq.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in FAQ), encoding="utf-8")
    (folder / "products" / "tw-kettle-k2.md").write_text(PRODUCT, encoding="utf-8")
    (folder / "skus.csv").write_text(SKUS, encoding="utf-8")
    return folder
