"""An embedded, API-compatible Toxiproxy (Shopify, v2.12) server on asyncio, and a typed client."""
