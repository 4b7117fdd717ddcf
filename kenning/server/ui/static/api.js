// Every request the explorer makes goes through here: the /v1 API of the server that served it.

const KEY = "kenning.key";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The API key of this tab (sessionStorage: gone when the tab closes). */
export const apiKey = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** Call `/v1/<path>`; `query` values that are empty are left out. Errors throw ApiError. */
export async function api(path, { method = "GET", query = {}, body } = {}) {
  const url = new URL(`v1/${path}`, document.baseURI);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  const key = apiKey.get();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (exc) {
    throw new ApiError(0, "unreachable", `The server did not answer (${exc.message}).`);
  }
  const data = await resp.json().catch(() => null);
  if (!resp.ok) {
    const error = data && data.error;
    throw new ApiError(resp.status, error ? error.code : "http_error", error ? error.message : `HTTP ${resp.status}`);
  }
  return data;
}
